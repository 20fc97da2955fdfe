// Command sidecar-bench drives a running sidecar over HTTP with a mix of
// session, usage and lock calls, performs the same operations straight
// against the same Redis (the sidecar's own store and Lua scripts, over
// rueidis: the same work minus HTTP), and prints throughput, HDR latency
// percentiles, the ratio sidecar/direct and the latency the sidecar adds.
// With -spawn it starts its own redis-server and sidecar on free loopback
// ports and also reports the sidecar's RSS, CPU per request and startup
// time. Results and how to read them: BENCHMARKS.md, "Load tool".
//
//	go run ./cmd/sidecar-bench -spawn -d 5s                  # closed loop, max throughput
//	go run ./cmd/sidecar-bench -spawn -rate 1000 -d 5s       # open loop at 1000 req/s
//	go run ./cmd/sidecar-bench -sidecar http://127.0.0.1:7480 -redis redis://127.0.0.1:6379/0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sidecar-bench:", err)
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	sidecarURL  string
	opsURL      string
	redisURL    string
	token       string
	spawn       bool
	sidecarBin  string
	redisServer string
	mix         mix
	conns       int
	duration    time.Duration
	requests    int64
	rate        float64
	warmup      time.Duration
	seed        int
	lastN       int
	phases      []string
	rounds      int
	startupRuns int
	progress    string
	sessionTTL  int
	maxEntries  int
	sidecarEnv  []string
	httpClient  string
}

// envList is a repeatable KEY=VALUE flag.
type envList []string

func (l *envList) String() string { return strings.Join(*l, " ") }

func (l *envList) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", v)
	}
	*l = append(*l, v)
	return nil
}

const usageText = `sidecar-bench: load the sidecar over HTTP and the same operations directly on Redis.

Usage:
  sidecar-bench -spawn [flags]                               start redis-server and the sidecar on loopback
  sidecar-bench -sidecar URL -redis URL [-ops URL] [flags]   use running ones

Each phase runs the same operation mix, from -c connections (closed loop,
as fast as answers come), or at -rate requests/s (open loop: requests are
scheduled at the rate and latency is measured from the scheduled time, so a
stall counts against every request it delays). Phases:
  direct   the sidecar's store and Lua scripts called straight over rueidis
  sidecar  the same operations over HTTP to the sidecar
  rpush    redis-benchmark -c <c> RPUSH of one stored entry (the ceiling of appends)
It prints, per phase and per operation, count, rate and p50/p90/p99/p99.9/max
latency, then sidecar/direct throughput and the latency the sidecar adds.
With -spawn also the sidecar's VmRSS/VmHWM, CPU per request of the sidecar
and redis-server, and startup time (exec to /readyz 200).

Mix operations (weights, e.g. -mix append=1 for appends only):
  append    POST .../entries (unique qa_id)       | store.Append (cognee.NewQAEntry + session_append.lua)
  read      GET .../entries?last_n=<last-n>       | store.LastEntries (LRANGE)
  feedback  PUT .../entries/{seed}/feedback       | store.UpdateEntry (session_entry_update.lua)
  usage     POST .../usage                        | store.AddUsage (session_usage.lua)
  lock      POST /v1/locks/{name}, then DELETE     | lock_acquire.lua, then lock_release.lua
            (alternating per connection, each its own uncontended lock)

Progress (a line per second) goes to stderr when it is a terminal.

Flags:
`

// parseFlags reads args; -h prints the usage to out and returns flag.ErrHelp.
func parseFlags(args []string, out io.Writer) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("sidecar-bench", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, usageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.sidecarURL, "sidecar", "", "base URL of a running sidecar's API listener, e.g. http://127.0.0.1:7480 (not with -spawn)")
	fs.StringVar(&cfg.opsURL, "ops", "", "base URL of its ops listener, for /readyz before the run (optional)")
	fs.StringVar(&cfg.redisURL, "redis", "", "URL of the Redis the sidecar uses, for the direct phase, e.g. redis://127.0.0.1:6379/0 (not with -spawn)")
	fs.StringVar(&cfg.token, "token", "", "bearer token, when the sidecar has SIDECAR_API_TOKEN")
	fs.BoolVar(&cfg.spawn, "spawn", false, "start a redis-server and the sidecar on free loopback ports, and stop both at the end")
	fs.StringVar(&cfg.sidecarBin, "sidecar-bin", "", "sidecar binary for -spawn (default: go build ./cmd/sidecar of this module into a temporary directory)")
	fs.StringVar(&cfg.redisServer, "redis-server", "redis-server", "redis-server binary for -spawn")
	mixFlag := fs.String("mix", "append=40,read=30,feedback=10,usage=10,lock=10", "operation weights: name=weight,... of append, read, feedback, usage, lock")
	fs.IntVar(&cfg.conns, "c", 16, "connections (closed loop), or the most requests in flight (-rate)")
	fs.DurationVar(&cfg.duration, "d", 5*time.Second, "length of each phase (unless -n)")
	fs.Int64Var(&cfg.requests, "n", 0, "requests per phase instead of -d (0: use -d)")
	fs.Float64Var(&cfg.rate, "rate", 0, "open loop at this many requests/s (0: closed loop, as fast as possible)")
	fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "unrecorded closed-loop warm-up before each phase")
	fs.IntVar(&cfg.seed, "seed-entries", 50, "entries stored in each connection's session before the phases (feedback targets)")
	fs.IntVar(&cfg.lastN, "last-n", 10, "last_n of the read operation")
	phases := fs.String("phases", "direct,sidecar", "phases in order: direct, sidecar, rpush (rpush runs once, first or after the others)")
	fs.IntVar(&cfg.rounds, "rounds", 1, "alternate the direct and sidecar phases this many times, each round -d/rounds long, and merge (a shared machine's background load then hits both alike)")
	fs.IntVar(&cfg.startupRuns, "startup-runs", 5, "with -spawn: extra sidecar starts timed from exec to /readyz 200 (besides the one under load)")
	fs.StringVar(&cfg.httpClient, "http-client", "raw", "raw: a minimal HTTP/1.1 client, one connection per -c, as wrk; std: net/http's (~3x the CPU per request)")
	fs.StringVar(&cfg.progress, "progress", "auto", "progress lines on stderr: auto (when a terminal), on, off")
	fs.IntVar(&cfg.sessionTTL, "session-ttl", 604800, "SESSION_TTL_SECONDS of the direct phase (and of a spawned sidecar)")
	fs.IntVar(&cfg.maxEntries, "max-entries", 0, "SESSION_MAX_ENTRIES of the direct phase (and of a spawned sidecar)")
	var senv envList
	fs.Var(&senv, "sidecar-env", "with -spawn: KEY=VALUE added to the sidecar's environment (repeatable), e.g. GOMAXPROCS=1, GOGC=200")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (see -h)", fs.Args())
	}
	var err error
	if cfg.mix, err = parseMix(*mixFlag); err != nil {
		return nil, fmt.Errorf("-mix: %w", err)
	}
	if cfg.phases, err = parsePhases(*phases); err != nil {
		return nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.sidecarEnv = senv
	cfg.sidecarURL = strings.TrimRight(cfg.sidecarURL, "/")
	cfg.opsURL = strings.TrimRight(cfg.opsURL, "/")
	return cfg, nil
}

// parsePhases reads -phases: a comma list of direct, sidecar and rpush.
func parsePhases(s string) ([]string, error) {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		switch p = strings.TrimSpace(p); p {
		case "direct", "sidecar", "rpush":
			out = append(out, p)
		case "":
		default:
			return nil, fmt.Errorf("-phases: unknown phase %q (direct, sidecar, rpush)", p)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-phases: none given")
	}
	return out, nil
}

// check refuses flags out of their ranges, and a missing or extra target.
func (c *config) check() error {
	switch {
	case c.conns < 1 || c.conns > 4096:
		return fmt.Errorf("-c %d: must be 1-4096", c.conns)
	case c.requests < 0:
		return errors.New("-n must not be negative")
	case c.requests == 0 && (c.duration <= 0 || c.duration > time.Hour):
		return fmt.Errorf("-d %v: must be more than 0 and at most an hour", c.duration)
	case c.rate < 0 || c.rate > 1e7:
		return fmt.Errorf("-rate %g: must be 0 (closed loop) up to 1e7", c.rate)
	case c.warmup < 0 || c.warmup > time.Minute:
		return fmt.Errorf("-warmup %v: must be 0 to a minute", c.warmup)
	case c.seed < 1 || c.seed > 100000:
		return fmt.Errorf("-seed-entries %d: must be 1-100000", c.seed)
	case c.lastN < 1 || c.lastN > 1000:
		return fmt.Errorf("-last-n %d: must be 1-1000", c.lastN)
	case c.rounds < 1 || c.rounds > 1000:
		return fmt.Errorf("-rounds %d: must be 1-1000", c.rounds)
	case c.startupRuns < 0 || c.startupRuns > 100:
		return fmt.Errorf("-startup-runs %d: must be 0-100", c.startupRuns)
	case c.httpClient != "raw" && c.httpClient != "std":
		return fmt.Errorf("-http-client %q: raw or std", c.httpClient)
	case c.progress != "auto" && c.progress != "on" && c.progress != "off":
		return fmt.Errorf("-progress %q: auto, on or off", c.progress)
	case c.spawn && (c.sidecarURL != "" || c.redisURL != ""):
		return errors.New("-spawn starts its own Redis and sidecar: drop -sidecar and -redis")
	case !c.spawn && c.has("sidecar") && c.sidecarURL == "":
		return errors.New("give -sidecar URL (and -redis URL), or -spawn")
	case !c.spawn && c.redisURL == "":
		return errors.New("give -redis URL (the sidecar's Redis: the direct phase runs on it and the sidecar phase's sessions are seeded through it), or -spawn")
	}
	return nil
}

func (c *config) has(phase string) bool {
	for _, p := range c.phases {
		if p == phase {
			return true
		}
	}
	return false
}

// showProgress decides whether progress lines go to w.
func (c *config) showProgress(w io.Writer) bool {
	switch c.progress {
	case "on":
		return true
	case "off":
		return false
	}
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
