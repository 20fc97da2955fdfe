package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsidecar/agentsidecar/bench/rig"
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
	srv, err := rig.Start("")
	if err != nil {
		return err
	}
	defer srv.Stop()
	rport, api := srv.RedisPort, srv.API
	fmt.Printf("redis %s; %d s per phase, %d rounds; Redis CPU per append (µs), from /proc\n\n",
		rig.RedisVersion(), int(phase.Seconds()), rounds)
	fmt.Printf("%-30s %7s %12s %12s %8s\n", "", "round", "Cognee", "sidecar", "ratio")
	configs := []config{{1, 1}, {1, 1000}, {16, 1}, {16, 1000}}
	for _, cf := range configs {
		for r := 1; r <= rounds; r++ {
			cog, cn, err := measure(srv.Redis.Process.Pid, phase, func(ctx context.Context, i int, n *atomic.Int64) error {
				return cognee(ctx, rport, cf, i, n)
			}, cf.clients)
			if err != nil {
				return err
			}
			side, sn, err := measure(srv.Redis.Process.Pid, phase, func(ctx context.Context, i int, n *atomic.Int64) error {
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
	conn, err := rig.Dial(port)
	if err != nil {
		return err
	}
	defer conn.Close()
	go func() { <-ctx.Done(); conn.Close() }()
	for k := 0; ctx.Err() == nil; k++ {
		key := fmt.Sprintf("agent_sessions:cognee:s%d", sessionOf(cf, i, k))
		value := strings.Replace(entry, "QAID", fmt.Sprintf("c%d-%d", i, k), 1)
		for _, cmd := range [][]string{{"RPUSH", key, value}, {"EXPIRE", key, "604800"}} {
			if _, err := conn.Do(cmd...); err != nil {
				return fmt.Errorf("%s: %w", cmd[0], err)
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
	if c, err := rig.Dial(port); err == nil {
		_, _ = c.Do("FLUSHALL")
		c.Close()
	}
}
