package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// entry is a Q&A entry as Cognee stores it (the text of bench/sessions_append.lua).
const entry = `{"time": "2026-11-29T10:00:00.000000+00:00", "question": "What did the quarterly report say about revenue growth in the EMEA region?", ` +
	`"context": "Q3 report, section 4.2: EMEA revenue grew 12% year over year, driven by the DACH markets and new enterprise contracts in the Nordics.", ` +
	`"answer": "EMEA revenue grew 12% year over year in Q3, mostly from DACH and new Nordic enterprise contracts.", "qa_id": "QAID", ` +
	`"feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`

const body = `{"qa_id":"QAID","question":"What did the quarterly report say about revenue growth in the EMEA region?",` +
	`"context":"Q3 report, section 4.2: EMEA revenue grew 12% year over year, driven by the DACH markets and new enterprise contracts in the Nordics.",` +
	`"answer":"EMEA revenue grew 12% year over year in Q3, mostly from DACH and new Nordic enterprise contracts."}`

func main() {
	phase := flag.Duration("d", 4*time.Second, "length of each phase")
	rounds := flag.Int("rounds", 2, "rounds of every phase")
	flag.Parse()
	if err := run(*phase, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "appendcost:", err)
		os.Exit(1)
	}
}

type config struct {
	clients, sessions int
}

func (c config) String() string {
	where := "one hot session"
	if c.sessions > 1 {
		where = fmt.Sprintf("%d sessions", c.sessions)
	}
	return fmt.Sprintf("%2d client(s), %s", c.clients, where)
}

func run(phase time.Duration, rounds int) error {
	tmp, err := os.MkdirTemp("", "appendcost")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "sidecar")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/sidecar").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v: %s", err, out)
	}
	rport, aport, oport := freePort(), freePort(), freePort()
	redis := exec.Command("redis-server", "--port", strconv.Itoa(rport), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", tmp)
	if err := redis.Start(); err != nil {
		return err
	}
	defer stop(redis)
	if err := waitTCP(rport); err != nil {
		return err
	}
	sc := exec.Command(bin)
	sc.Env = append(os.Environ(), "REDIS_URL=redis://127.0.0.1:"+strconv.Itoa(rport)+"/0", "LOG_LEVEL=warn",
		"SIDECAR_LISTEN_ADDR=127.0.0.1:"+strconv.Itoa(aport), "SIDECAR_OPS_ADDR=127.0.0.1:"+strconv.Itoa(oport))
	sc.Stderr = os.Stderr
	if err := sc.Start(); err != nil {
		return err
	}
	defer stop(sc)
	if err := waitReady(oport); err != nil {
		return err
	}
	api := "http://127.0.0.1:" + strconv.Itoa(aport)
	out, _ := exec.Command("redis-server", "--version").Output()
	fmt.Printf("redis %s; %d s per phase, %d rounds; Redis CPU per append (µs), from /proc\n\n",
		strings.Fields(string(out))[2], int(phase.Seconds()), rounds)
	fmt.Printf("%-30s %7s %12s %12s %8s\n", "", "round", "Cognee", "sidecar", "ratio")
	configs := []config{{1, 1}, {1, 1000}, {16, 1}, {16, 1000}}
	for _, cf := range configs {
		for r := 1; r <= rounds; r++ {
			cog, cn, err := measure(redis.Process.Pid, phase, func(ctx context.Context, i int, n *atomic.Int64) error {
				return cognee(ctx, rport, cf, i, n)
			}, cf.clients)
			if err != nil {
				return err
			}
			side, sn, err := measure(redis.Process.Pid, phase, func(ctx context.Context, i int, n *atomic.Int64) error {
				return sidecar(ctx, api, cf, r, i, n)
			}, cf.clients)
			if err != nil {
				return err
			}
			flush(rport)
			fmt.Printf("%-30s %7d %7.1f (%4.0fk) %7.1f (%4.0fk) %7.2fx\n", cf, r, cog, float64(cn)/1000, side,
				float64(sn)/1000, side/cog)
		}
	}
	return nil
}

// measure runs work on clients goroutines for d and returns Redis's CPU
// per unit of work (µs) and the units done.
func measure(pid int, d time.Duration, work func(context.Context, int, *atomic.Int64) error, clients int) (float64, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	before := cpu(pid)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := work(ctx, i, &n); err != nil && ctx.Err() == nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	used := cpu(pid) - before
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, err
	}
	if n.Load() == 0 {
		return 0, 0, fmt.Errorf("no work done")
	}
	return used.Seconds() * 1e6 / float64(n.Load()), n.Load(), nil
}

// cognee is one client of Cognee's append: RPUSH, then EXPIRE, each a round
// trip on the client's own connection (no pipelining, as redis-py sends
// them), to session i (hot: all clients on one).
func cognee(ctx context.Context, port int, cf config, i int, n *atomic.Int64) error {
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	defer conn.Close()
	go func() { <-ctx.Done(); conn.Close() }()
	rd := bufio.NewReader(conn)
	for k := 0; ctx.Err() == nil; k++ {
		key := fmt.Sprintf("agent_sessions:cognee:s%d", sessionOf(cf, i, k))
		value := strings.Replace(entry, "QAID", fmt.Sprintf("c%d-%d", i, k), 1)
		for _, cmd := range [][]string{{"RPUSH", key, value}, {"EXPIRE", key, "604800"}} {
			if _, err := conn.Write(resp(cmd)); err != nil {
				return err
			}
			line, err := rd.ReadString('\n')
			if err != nil {
				return err
			}
			if line[0] == '-' {
				return fmt.Errorf("%s: %s", cmd[0], line)
			}
		}
		n.Add(1)
	}
	return nil
}

// sidecar is one client of the sidecar's append (POST .../entries, keep-alive).
func sidecar(ctx context.Context, api string, cf config, round, i int, n *atomic.Int64) error {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for k := 0; ctx.Err() == nil; k++ {
		url := fmt.Sprintf("%s/v1/users/bench/sessions/r%d-s%d/entries", api, round, sessionOf(cf, i, k))
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(strings.Replace(body, "QAID", fmt.Sprintf("r%d-c%d-%d", round, i, k), 1)))
		req.Header.Set("Content-Type", "application/json")
		rep, err := c.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, rep.Body)
		rep.Body.Close()
		if rep.StatusCode != http.StatusCreated {
			return fmt.Errorf("POST %s: %d", url, rep.StatusCode)
		}
		n.Add(1)
	}
	return nil
}

// sessionOf is the session of client i's k-th append.
func sessionOf(cf config, i, k int) int {
	if cf.sessions == 1 {
		return 0
	}
	return (i*7919 + k) % cf.sessions
}

func resp(args []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// cpu is the user and system time of process pid.
func cpu(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / 100 // USER_HZ
}

func flush(port int) {
	conn, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = conn.Write(resp([]string{"FLUSHALL"}))
	_, _ = bufio.NewReader(conn).ReadString('\n')
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitTCP(port int) error {
	for range 100 {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on %d", port)
}

func waitReady(port int) error {
	for range 200 {
		if r, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the sidecar is not ready")
}

func stop(c *exec.Cmd) {
	_ = c.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.Process.Kill()
	}
}
