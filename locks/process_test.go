package locks_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/locks/client"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// The test binary doubles as the worker program of the multi-process tests:
// with LOCKS_WORKER set, TestMain runs a worker instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("LOCKS_WORKER"); mode != "" {
		if err := worker(mode); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Main shares one Redis Cluster among the cluster subtests.
	os.Exit(redisstoretest.Main(m))
}

// worker is one OS process contending for a lock through a sidecar.
//
//	loop: LOCKS_N times acquire → critical section → release. The section
//	      increments a counter file by read-sleep-write (lost updates show
//	      any overlap) and appends "fence pid start end" to a log file.
//	hold: acquire with a short TTL and background refresh, print the fence,
//	      then block until killed.
func worker(mode string) error {
	c := client.New(os.Getenv("LOCKS_API"))
	name := os.Getenv("LOCKS_NAME")
	ctx := context.Background()
	switch mode {
	case "hold":
		lease, err := c.Acquire(ctx, name, client.Options{TTL: 400 * time.Millisecond, RefreshEvery: 100 * time.Millisecond, Owner: "pid-" + strconv.Itoa(os.Getpid())})
		if err != nil {
			return err
		}
		fmt.Printf("held %d\n", lease.Fence)
		<-lease.Done()
		return lease.Err()
	case "loop":
		n, _ := strconv.Atoi(os.Getenv("LOCKS_N"))
		log, err := os.OpenFile(os.Getenv("LOCKS_LOG"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer log.Close()
		counter := os.Getenv("LOCKS_COUNTER")
		for range n {
			lease, err := c.Acquire(ctx, name, client.Options{TTL: 10 * time.Second, Wait: 60 * time.Second, Owner: "pid-" + strconv.Itoa(os.Getpid())})
			if err != nil {
				return err
			}
			start := time.Now().UnixNano()
			b, err := os.ReadFile(counter)
			if err != nil {
				return err
			}
			v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			time.Sleep(200 * time.Microsecond)
			if err := os.WriteFile(counter, []byte(strconv.Itoa(v+1)), 0o644); err != nil {
				return err
			}
			end := time.Now().UnixNano()
			if _, err := fmt.Fprintf(log, "%d %d %d %d\n", lease.Fence, os.Getpid(), start, end); err != nil {
				return err
			}
			if err := lease.Release(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	return errors.New("unknown LOCKS_WORKER mode " + mode)
}

func workerCmd(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"LOCKS_WORKER=" + mode}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	return cmd
}

type section struct {
	fence      int64
	pid        int
	start, end int64
}

// TestProcessesContendThroughSidecars: four OS processes, through two
// sidecars on one Redis, run 240 critical sections: never two at once,
// every one runs, and fencing tokens increase strictly in grant order.
func TestProcessesContendThroughSidecars(t *testing.T) {
	const procs, each = 4, 60
	s := redisstoretest.New(t)
	sidecars := []*sidecartest.Host{sidecartest.Start(t, s, nil, locks.Factory), sidecartest.Start(t, s, nil, locks.Factory)}
	dir := t.TempDir()
	logPath, counterPath := filepath.Join(dir, "sections.log"), filepath.Join(dir, "counter")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(counterPath, []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for i := range procs {
		cmd := workerCmd(t, "loop", "LOCKS_API="+sidecars[i%2].API, "LOCKS_NAME=shared-work",
			"LOCKS_N="+strconv.Itoa(each), "LOCKS_LOG="+logPath, "LOCKS_COUNTER="+counterPath)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}

	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var secs []section
	perPid := map[int]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s section
		if _, err := fmt.Sscan(sc.Text(), &s.fence, &s.pid, &s.start, &s.end); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		secs = append(secs, s)
		perPid[s.pid]++
	}
	if len(secs) != procs*each || len(perPid) != procs {
		t.Fatalf("%d sections by %d processes, want %d by %d", len(secs), len(perPid), procs*each, procs)
	}
	if b, _ := os.ReadFile(counterPath); string(b) != strconv.Itoa(procs*each) {
		t.Fatalf("counter %s, want %d: an update was lost to an overlap", b, procs*each)
	}
	sort.Slice(secs, func(i, j int) bool { return secs[i].start < secs[j].start })
	for i := 1; i < len(secs); i++ {
		prev, cur := secs[i-1], secs[i]
		if cur.start < prev.end {
			t.Fatalf("sections overlap: pid %d [%d,%d] and pid %d [%d,%d]", prev.pid, prev.start, prev.end, cur.pid, cur.start, cur.end)
		}
		if cur.fence <= prev.fence {
			t.Fatalf("fence %d granted after %d: not strictly increasing", cur.fence, prev.fence)
		}
	}
}

// TestDeadProcessLockFreesAtTTL: a process holding a self-refreshing lease
// is killed; its lock frees when its last TTL runs out, and the next holder
// gets a larger fencing token.
func TestDeadProcessLockFreesAtTTL(t *testing.T) {
	s := redisstoretest.New(t)
	h := sidecartest.Start(t, s, nil, locks.Factory)
	cmd := workerCmd(t, "hold", "LOCKS_API="+h.API, "LOCKS_NAME=dying")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var first int64
	if _, serr := fmt.Sscanf(line, "held %d\n", &first); err != nil || serr != nil {
		t.Fatalf("holder said %q (%v), want held <fence>", line, err)
	}
	// The lease outlives its 400 ms TTL while the process refreshes it.
	time.Sleep(900 * time.Millisecond)
	if st := inspect(t, h.API, "dying"); !st.Held {
		t.Fatalf("lock free while its holder is alive and refreshing: %+v", st)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	killed := time.Now()
	g := acquire(t, h.API, "dying", `{"wait_ms":5000}`)
	if waited := time.Since(killed); waited > 2*time.Second || g.FencingToken <= first {
		t.Fatalf("next holder after %s with fence %d, want within the 400 ms TTL (plus slack) and a fence above the dead holder's %d", waited, g.FencingToken, first)
	}
}
