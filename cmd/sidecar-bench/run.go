package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

func numCPU() int { return runtime.NumCPU() }

// env is what the phases run against.
type env struct {
	api, ops  string
	redisURL  string
	redisAddr string // host:port, for redis-benchmark
	sidecar   *sidecarProc
	redis     *proc
	startups  []time.Duration
	idleRSS   int64
	conn      *redisstore.Conn
	runID     string
	cleanups  []func()
}

// run is the whole tool; it returns flag.ErrHelp after -h.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	var progressOut io.Writer
	if cfg.showProgress(stderr) {
		progressOut = stderr
	}
	e := &env{api: cfg.sidecarURL, ops: cfg.opsURL, redisURL: cfg.redisURL, runID: randomID()}
	defer e.close()
	if cfg.spawn {
		if err := e.spawn(ctx, cfg, stdout); err != nil {
			return err
		}
	} else if e.ops != "" {
		if err := waitReady(ctx, e.ops, nil, 10*time.Second); err != nil {
			return err
		}
	}
	if e.conn, err = openRedis(ctx, e.redisURL); err != nil {
		return err
	}
	if e.redisAddr == "" && e.redisURL != "" {
		if u, err := url.Parse(e.redisURL); err == nil {
			e.redisAddr = u.Host
		}
	}

	mode := "closed loop (max throughput)"
	if cfg.rate > 0 {
		mode = fmt.Sprintf("open loop at %g req/s (latency from the scheduled time)", cfg.rate)
	}
	amount := "duration " + cfg.duration.String()
	if cfg.requests > 0 {
		amount = fmt.Sprintf("%d requests", cfg.requests)
	}
	fmt.Fprintf(stdout, "machine: %s, %s; load average %s (before)\n", machine(), runtime.Version(), loadAverage())
	fmt.Fprintf(stdout, "run: mix %s, %d connections, %s per phase in %d round(s), %s, warm-up %v, phases %s, %s HTTP client\n",
		cfg.mix.text, cfg.conns, amount, cfg.rounds, mode, cfg.warmup, strings.Join(cfg.phases, ","), cfg.httpClient)
	if e.api != "" {
		fmt.Fprintf(stdout, "sidecar: %s", e.api)
		if cfg.spawn && len(cfg.sidecarEnv) > 0 {
			fmt.Fprintf(stdout, " (with %s)", strings.Join(cfg.sidecarEnv, " "))
		}
		fmt.Fprintln(stdout)
	}
	if e.redisAddr != "" {
		fmt.Fprintf(stdout, "redis: %s\n", e.redisAddr)
	}

	var rpush float64
	if cfg.has("rpush") && cfg.phases[0] == "rpush" {
		if rpush, err = runRPush(ctx, e.conn, e.redisAddr, cfg, stdout); err != nil {
			return err
		}
	}
	results := map[string]*phaseResult{}
	if cfg.has("direct") || cfg.has("sidecar") {
		if results, err = e.runPhases(ctx, cfg, progressOut); err != nil {
			return err
		}
		for _, ph := range cfg.phases {
			if r := results[ph]; r != nil {
				printPhase(stdout, r)
			}
		}
	}
	if cfg.has("rpush") && cfg.phases[0] != "rpush" {
		if rpush, err = runRPush(ctx, e.conn, e.redisAddr, cfg, stdout); err != nil {
			return err
		}
	}
	direct, side := results["direct"], results["sidecar"]
	fmt.Fprintf(stdout, "load average %s (after)\n", loadAverage())
	printComparison(stdout, direct, side)
	return e.printSpawned(stdout, cfg, direct, side, rpush)
}

func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// spawn starts redis-server and the sidecar, timing the sidecar's start
// cfg.startupRuns times before starting the one that takes the load.
func (e *env) spawn(ctx context.Context, cfg *config, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "sidecar-bench-")
	if err != nil {
		return err
	}
	e.addCleanup(func() { os.RemoveAll(dir) })
	bin := cfg.sidecarBin
	if bin == "" {
		if bin, err = buildSidecar(ctx, dir); err != nil {
			return err
		}
	}
	if _, err := exec.LookPath(cfg.redisServer); err != nil {
		return fmt.Errorf("-spawn needs %s: %w", cfg.redisServer, err)
	}
	r, addr, err := startRedis(ctx, cfg.redisServer, dir)
	if err != nil {
		return err
	}
	e.redis, e.redisAddr, e.redisURL = r, addr, "redis://"+addr+"/0"
	if v, err := exec.Command(cfg.redisServer, "--version").Output(); err == nil {
		fmt.Fprintf(stdout, "spawned: %s", v)
	}
	for range cfg.startupRuns {
		s, err := startSidecar(ctx, bin, addr, cfg)
		if err != nil {
			return err
		}
		e.startups = append(e.startups, s.ready)
		s.stop()
	}
	s, err := startSidecar(ctx, bin, addr, cfg)
	if err != nil {
		return err
	}
	e.sidecar = s
	e.startups = append(e.startups, s.ready)
	e.api, e.ops = s.api, s.ops
	e.idleRSS, _, _ = memory(s.pid())
	return nil
}

func (e *env) addCleanup(f func()) { e.cleanups = append(e.cleanups, f) }

func (e *env) close() {
	if e.conn != nil {
		e.conn.Close()
	}
	if e.sidecar != nil {
		e.sidecar.stop()
	}
	if e.redis != nil {
		e.redis.stop()
	}
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	e.cleanups = nil
}

// openRedis connects the direct phase's client the way the sidecar does.
func openRedis(ctx context.Context, redisURL string) (*redisstore.Conn, error) {
	logger := slog.New(slog.DiscardHandler)
	conn, err := redisstore.Open(redisstore.Options{URL: redisURL, Port: 6379, SSLCertReqs: "required"}, logger)
	if err != nil {
		return nil, err
	}
	select {
	case <-conn.Ready():
		return conn, nil
	case <-ctx.Done():
		conn.Close()
		return nil, ctx.Err()
	case <-time.After(10 * time.Second):
		conn.Close()
		return nil, fmt.Errorf("redis %s: not connected after 10s: %s", redisURL, conn.LastError())
	}
}

// phase is one of the load phases, prepared: its target and connections.
type phase struct {
	name    string
	tgt     target
	direct  *directTarget // for seeding and clean-up, in both phases
	workers []*worker
	result  *phaseResult
}

// runPhases seeds each phase's sessions, warms it up, then runs the load
// phases in turn, -rounds times, each round -d/-rounds (or -n/-rounds
// requests) long, so on a shared machine both phases see the same
// background load; the rounds of a phase are merged. It reads the CPU time
// of the spawned processes around every round.
func (e *env) runPhases(ctx context.Context, cfg *config, progressOut io.Writer) (map[string]*phaseResult, error) {
	phases, closeTargets, err := e.buildPhases(ctx, cfg)
	defer closeTargets()
	if err != nil {
		return nil, err
	}
	defer func() { // release what the last requests left held (not measured)
		for _, p := range phases {
			for _, w := range p.workers {
				if w.lockToken != "" {
					_ = p.direct.do(context.WithoutCancel(ctx), w, opLockRelease)
				}
			}
		}
	}()
	for _, p := range phases {
		if cfg.warmup > 0 {
			w := runLoad(ctx, loadSpec{name: p.name + " warm-up", mix: cfg.mix, duration: cfg.warmup}, p.tgt, p.workers)
			if w.total() == 0 && w.firstErr != nil {
				return nil, fmt.Errorf("%s warm-up: every request failed: %w", p.name, w.firstErr)
			}
		}
	}
	if err := e.measure(ctx, cfg, phases, progressOut); err != nil {
		return nil, err
	}
	out := map[string]*phaseResult{}
	for _, p := range phases {
		if p.result.total() == 0 {
			return nil, fmt.Errorf("phase %s: no request succeeded: %v", p.name, p.result.firstErr)
		}
		out[p.name] = p.result
	}
	return out, nil
}

// buildPhases makes the direct and sidecar phases cfg names, each with its
// workers and their seeded sessions; closeTargets closes the HTTP targets
// (call it whatever the error).
func (e *env) buildPhases(ctx context.Context, cfg *config) (phases []*phase, closeTargets func(), err error) {
	var closers []func()
	closeTargets = func() {
		for _, c := range closers {
			c()
		}
	}
	scfg := sessionstore.Config{TTLSeconds: cfg.sessionTTL, MaxEntries: cfg.maxEntries, AbandonAfterSeconds: 1800}
	for _, name := range cfg.phases {
		if name != "direct" && name != "sidecar" {
			continue
		}
		dt, err := newDirectTarget(e.conn, scfg, cfg.seed, cfg.lastN)
		if err != nil {
			return nil, closeTargets, err
		}
		p := &phase{name: name, tgt: dt, direct: dt, workers: make([]*worker, cfg.conns)}
		if name == "sidecar" {
			ht, err := newHTTPTarget(e.api, cfg.token, cfg.httpClient, cfg.conns, cfg.seed, cfg.lastN)
			if err != nil {
				return nil, closeTargets, err
			}
			closers = append(closers, ht.close)
			p.tgt = ht
		}
		for i := range p.workers {
			p.workers[i] = newWorker(e.runID, name, i, 1)
			if err := seedSession(ctx, dt, p.workers[i]); err != nil {
				return nil, closeTargets, err
			}
		}
		phases = append(phases, p)
	}
	return phases, closeTargets, nil
}

// measure runs the load phases in turn, cfg.rounds times, merging each
// phase's rounds into its result with the CPU time of the bench, the
// sidecar and redis-server during it.
func (e *env) measure(ctx context.Context, cfg *config, phases []*phase, progressOut io.Writer) error {
	pids := map[string]int{}
	if e.sidecar != nil {
		pids["sidecar"] = e.sidecar.pid()
	}
	if e.redis != nil {
		pids["redis"] = e.redis.pid()
	}
	spec := loadSpec{mix: cfg.mix, duration: cfg.duration / time.Duration(cfg.rounds), rate: cfg.rate, progress: progressOut}
	if cfg.requests > 0 {
		spec.requests = max(cfg.requests/int64(cfg.rounds), 1)
	}
	for round := range cfg.rounds {
		for _, p := range phases {
			spec.name = p.name
			if cfg.rounds > 1 {
				spec.name = fmt.Sprintf("%s %d/%d", p.name, round+1, cfg.rounds)
			}
			before := map[string]time.Duration{"bench": selfCPU()}
			for n, pid := range pids {
				before[n], _ = cpuTime(pid)
			}
			res := runLoad(ctx, spec, p.tgt, p.workers)
			res.name = p.name
			res.cpu = map[string]time.Duration{"bench": selfCPU() - before["bench"]}
			for n, pid := range pids {
				after, _ := cpuTime(pid)
				res.cpu[n] = after - before[n]
			}
			if p.result == nil {
				p.result = res
			} else {
				p.result.merge(res)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// runRPush runs redis-benchmark's RPUSH of one stored entry from cfg.conns
// connections for about cfg.duration (sized from a short calibration run),
// and returns its rate.
func runRPush(ctx context.Context, conn *redisstore.Conn, addr string, cfg *config, stdout io.Writer) (float64, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("rpush: redis address %q: %w", addr, err)
	}
	entry, err := cognee.NewQAEntry(cognee.QAFields{Question: []byte(jsonString(question)), Answer: []byte(jsonString(answer))}, "q1", time.Now())
	if err != nil {
		return 0, err
	}
	key := "bench-" + randomID() + ":rpush"
	bench := func(n int) (float64, error) {
		cmd := exec.CommandContext(ctx, "redis-benchmark", "-h", host, "-p", port, "-c", strconv.Itoa(cfg.conns),
			"-n", strconv.Itoa(n), "--csv", "RPUSH", key, string(entry))
		out, err := cmd.Output()
		if err != nil {
			return 0, fmt.Errorf("redis-benchmark: %w", err)
		}
		// The test name (the command, with the entry's quotes unescaped)
		// comes first; the seven numbers after it: rps, avg, min, p50,
		// p95, p99, max.
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		f := strings.Split(lines[len(lines)-1], ",")
		if len(lines) < 2 || len(f) < 8 {
			return 0, fmt.Errorf("redis-benchmark: unexpected output %q", out)
		}
		return strconv.ParseFloat(strings.Trim(f[len(f)-7], `"`), 64)
	}
	calib, err := bench(20000)
	if err != nil {
		return 0, err
	}
	secs := cfg.duration.Seconds()
	if cfg.requests > 0 {
		secs = 1
	}
	n := min(max(int(calib*secs), 20000), 5_000_000)
	start := time.Now()
	rate, err := bench(n)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "\nphase rpush: redis-benchmark -c %d -n %d RPUSH <%d-byte entry>: %.2f s, %.0f req/s\n",
		cfg.conns, n, len(entry), time.Since(start).Seconds(), rate)
	// Drop the list: it holds n copies of the entry.
	if client, err := conn.Client(); err == nil {
		_ = client.Do(ctx, client.B().Del().Key(key).Build()).Error()
	}
	return rate, nil
}

// median of ds (sorted copy).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
