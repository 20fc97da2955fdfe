package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// These tests run the real binary as a user would, with nothing but
// environment variables, and watch its exit code, stderr and endpoints.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sidecar-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "sidecar")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running sidecar process.
type proc struct {
	cmd       *exec.Cmd
	api, ops  string
	mu        sync.Mutex
	stderr    bytes.Buffer
	exited    chan struct{}
	exitError error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.Write(b)
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// start runs the binary with a clean environment plus env, on free loopback
// ports.
func start(t *testing.T, env ...string) *proc {
	t.Helper()
	apiPort, _ := redisstoretest.FreePort()
	opsPort, _ := redisstoretest.FreePort()
	p := &proc{api: fmt.Sprintf("127.0.0.1:%d", apiPort), ops: fmt.Sprintf("127.0.0.1:%d", opsPort), exited: make(chan struct{})}
	p.cmd = exec.Command(binary)
	p.cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"SIDECAR_LISTEN_ADDR=" + p.api, "SIDECAR_OPS_ADDR=" + p.ops,
	}, env...)
	p.cmd.Stderr = p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exitError = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("sidecar stderr:\n%s", p.log())
		}
	})
	return p
}

// wait returns the exit code, failing the test if the process runs on.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("sidecar still running after %s", timeout)
		return -1
	}
}

func get(url string) int {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitStatus(t *testing.T, url string, want int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for get(url) != want {
		if time.Since(start) > timeout {
			t.Fatalf("GET %s did not answer %d within %s", url, want, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

func TestBadConfigExitsWithOneLineNamingTheVariable(t *testing.T) {
	tests := []struct {
		env  string
		want string
	}{
		{"CACHE_PORT=70000", "sidecar: CACHE_PORT: "},
		{"SIDECAR_MODULES=sessions,nope", "sidecar: SIDECAR_MODULES: "},
		{"REDIS_URL=http://localhost", "sidecar: REDIS_URL: "},
		{"LOG_LEVEL=chatty", "sidecar: LOG_LEVEL: "},
		{"SIDECAR_STARTUP_TIMEOUT=never", "sidecar: SIDECAR_STARTUP_TIMEOUT: "},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			p := start(t, tc.env)
			if code := p.wait(t, 10*time.Second); code == 0 {
				t.Fatalf("exit code 0, want non-zero")
			}
			out := strings.TrimRight(p.log(), "\n")
			if !strings.HasPrefix(out, tc.want) || strings.Contains(out, "\n") {
				t.Fatalf("stderr %q, want one line starting %q", out, tc.want)
			}
		})
	}
}

func TestEmbeddedStartServesAndStopsOnSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := start(t)
			took := waitStatus(t, "http://"+p.ops+"/healthz", 200, 10*time.Second)
			t.Logf("embedded start to /healthz 200: %s", took)
			waitStatus(t, "http://"+p.ops+"/readyz", 200, 10*time.Second)
			if !strings.Contains(p.log(), "embedded in-memory Redis") {
				t.Fatalf("no embedded-mode warning in log:\n%s", p.log())
			}
			if n := strings.Count(p.log(), `"level":"WARN"`); n != 1 {
				t.Fatalf("%d warnings at a clean embedded start, want exactly 1", n)
			}
			// the scripts' path is the embedded Redis's own, not a refusal
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.log(), `"msg":"redis scripts"`); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no \"redis scripts\" line in the log:\n%s", p.log())
				}
			}
			if strings.Contains(p.log(), "unknown command") {
				t.Fatalf("the embedded start logs a refusal, not the path it takes:\n%s", p.log())
			}
			_ = p.cmd.Process.Signal(sig)
			if code := p.wait(t, 15*time.Second); code != 0 {
				t.Fatalf("exit code %d after %s, want 0", code, sig)
			}
			lines := strings.Split(strings.TrimRight(p.log(), "\n"), "\n")
			if last := lines[len(lines)-1]; !strings.Contains(last, `"msg":"stopped"`) {
				t.Fatalf("last log line %q, want the \"stopped\" line", last)
			}
		})
	}
}

// A lock acquire waiting 12 s, started 0.5 s before SIGTERM, is answered
// 503 shutting_down with Retry-After as the shutdown begins (it does not
// wait out the drain and lose its connection), takes nothing, and every
// module then closes with a deadline of its own: exit 0, a log without a
// cut-off request or a failed close, "stopped" last.
func TestSIGTERMAnswersAWaitingLockAcquire(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	p := start(t, "REDIS_URL="+srv.URL())
	waitStatus(t, "http://"+p.ops+"/readyz", 200, 15*time.Second)
	base := "http://" + p.api + "/v1/locks/sigterm"
	c := http.Client{Timeout: 60 * time.Second}
	resp, err := c.Post(base, "application/json", strings.NewReader(`{"ttl_ms":60000,"owner":"holder"}`))
	if err != nil {
		t.Fatal(err)
	}
	var held struct{ Token string }
	err = json.NewDecoder(resp.Body).Decode(&held)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("holder's acquire: %d %v", resp.StatusCode, err)
	}

	type answer struct {
		status     int
		retryAfter string
		body       string
		err        error
	}
	got := make(chan answer, 1)
	started := time.Now()
	go func() {
		resp, err := c.Post(base, "application/json", strings.NewReader(`{"wait_ms":12000,"owner":"waiter"}`))
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- answer{resp.StatusCode, resp.Header.Get("Retry-After"), string(b), err}
	}()
	time.Sleep(500*time.Millisecond - time.Since(started))
	_ = p.cmd.Process.Signal(syscall.SIGTERM)

	a := <-got
	if a.err != nil || a.status != 503 || !strings.Contains(a.body, `"code":"shutting_down"`) || a.retryAfter == "" {
		t.Errorf("waiting acquire at SIGTERM: %d %q Retry-After %q (err %v), want 503 shutting_down with Retry-After", a.status, a.body, a.retryAfter, a.err)
	}
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	out := p.log()
	_, shutdown, _ := strings.Cut(out, `"msg":"shutting down"`)
	for _, bad := range []string{`"level":"WARN"`, `"level":"ERROR"`, "cut off", "context deadline exceeded"} {
		if strings.Contains(shutdown, bad) {
			t.Errorf("the shutdown logged %s:\n%s", bad, out)
		}
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"msg":"stopped"`) {
		t.Errorf("last log line %q, want the \"stopped\" line", last)
	}
	rc := srv.Client(t)
	if v, err := rc.Do(t.Context(), rc.B().Get().Key("sigterm").Build()).ToString(); err != nil || v != held.Token {
		t.Errorf("the lock after SIGTERM: %q %v, want the holder's token", v, err)
	}
}

func TestRedisLateThenReady(t *testing.T) {
	port, _ := redisstoretest.FreePort()
	p := start(t, fmt.Sprintf("REDIS_URL=redis://127.0.0.1:%d", port), "LOG_FORMAT=text")
	waitStatus(t, "http://"+p.ops+"/healthz", 200, 10*time.Second)
	if got := get("http://" + p.ops + "/readyz"); got != 503 {
		t.Fatalf("readyz before Redis: %d, want 503", got)
	}
	time.Sleep(300 * time.Millisecond)
	if !strings.Contains(p.log(), "redis not reachable, retrying") {
		t.Fatalf("failed attempts are not logged:\n%s", p.log())
	}
	redisstoretest.NewRealOnPort(t, port)
	waitStatus(t, "http://"+p.ops+"/readyz", 200, 15*time.Second)
}

func TestUnreachableRedisExitsAfterStartupTimeout(t *testing.T) {
	port, _ := redisstoretest.FreePort()
	p := start(t, fmt.Sprintf("REDIS_URL=redis://:hunter2@127.0.0.1:%d", port), "SIDECAR_STARTUP_TIMEOUT=1s")
	if code := p.wait(t, 15*time.Second); code == 0 {
		t.Fatal("exit code 0, want non-zero")
	}
	out := p.log()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "sidecar: ") || !strings.Contains(last, "SIDECAR_STARTUP_TIMEOUT") {
		t.Fatalf("last line %q, want the reason naming SIDECAR_STARTUP_TIMEOUT", last)
	}
	if strings.Contains(out, "hunter2") {
		t.Fatalf("the Redis password reached the log:\n%s", out)
	}
}

// Under a low file limit, 3 000 idle connections to the API port take no
// file of the ops port: /healthz and /readyz keep answering, and a real
// request is served (the longest-idle connections are shed).
func TestIdleConnectionsCannotStarveTheHealthCheck(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) not on PATH")
	}
	apiPort, _ := redisstoretest.FreePort()
	opsPort, _ := redisstoretest.FreePort()
	p := &proc{api: fmt.Sprintf("127.0.0.1:%d", apiPort), ops: fmt.Sprintf("127.0.0.1:%d", opsPort), exited: make(chan struct{})}
	p.cmd = exec.Command(prlimit, "--nofile=256:256", "--", binary)
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SIDECAR_LISTEN_ADDR=" + p.api, "SIDECAR_OPS_ADDR=" + p.ops, "REDIS_URL=" + srv.URL()}
	p.cmd.Stderr = p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exitError = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.exited })
	waitStatus(t, "http://"+p.ops+"/readyz", 200, 15*time.Second)

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 3000 {
		c, err := net.DialTimeout("tcp", p.api, 2*time.Second)
		if err != nil {
			break // the accept queue is full: the rest wait in the kernel
		}
		conns = append(conns, c)
	}
	t.Logf("%d idle connections open to the API port", len(conns))
	for _, path := range []string{"/healthz", "/readyz"} {
		if got := get("http://" + p.ops + path); got != 200 {
			t.Fatalf("%s with %d idle API connections under a 256-file limit: got %d, want 200\n%s", path, len(conns), got, p.log())
		}
	}
	c := http.Client{Timeout: 20 * time.Second}
	resp, err := c.Get("http://" + p.api + "/v1/users/u/sessions/s/entries")
	if err != nil {
		t.Fatalf("API request with %d idle connections: %v", len(conns), err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("API request: %d", resp.StatusCode)
	}
	if strings.Contains(p.log(), "too many open files") {
		t.Fatalf("the sidecar ran out of files:\n%s", p.log())
	}
}
