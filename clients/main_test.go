// Package clients_test runs the Python and TypeScript clients' own suites
// (python3 -m unittest, node --test) against the built sidecar binary and a
// real redis-server, checks the committed TypeScript types against the
// served /openapi.json, and runs docs/clients.md's examples.
package clients_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// sidecar is one running binary: its API and ops base URLs.
type sidecar struct {
	API, Ops string
}

var (
	open    sidecar // no token
	guarded sidecar // SIDECAR_API_TOKEN=token
	binDir  string
)

const token = "clients-s3cret"

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	stop, err := redisstoretest.Setup(func(tb testing.TB) {
		srv := redisstoretest.New(tb)
		binDir = tb.TempDir()
		bin := filepath.Join(binDir, "sidecar")
		build := exec.Command("go", "build", "-o", bin, "./cmd/sidecar")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			tb.Fatalf("go build ./cmd/sidecar: %v\n%s", err, out)
		}
		open = startBinary(tb, bin, srv.URL(), nil)
		guarded = startBinary(tb, bin, srv.URL(), []string{"SIDECAR_API_TOKEN=" + token})
	})
	defer stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start sidecar:", err)
		return 1
	}
	return redisstoretest.Main(m)
}

// startBinary runs the sidecar binary on free loopback ports against
// redisURL, waits for /readyz and stops it (SIGTERM) at cleanup.
func startBinary(tb testing.TB, bin, redisURL string, env []string) sidecar {
	tb.Helper()
	api, ops := freePort(tb), freePort(tb)
	cmd := exec.Command(bin)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Env = append(os.Environ(),
		"REDIS_URL="+redisURL,
		"SIDECAR_LISTEN_ADDR=127.0.0.1:"+strconv.Itoa(api),
		"SIDECAR_OPS_ADDR=127.0.0.1:"+strconv.Itoa(ops),
		"LOG_LEVEL=warn",
		// the suites' events tests watch after writing: they read what
		// every write recorded
		"SESSION_EVENTS=always",
	)
	cmd.Env = append(cmd.Env, env...)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", bin, err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	s := sidecar{API: fmt.Sprintf("http://127.0.0.1:%d", api), Ops: fmt.Sprintf("http://127.0.0.1:%d", ops)}
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := http.Get(s.Ops + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("sidecar not ready after 60 s: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(tb testing.TB) int {
	tb.Helper()
	p, err := redisstoretest.FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// suiteEnv is what the Python and TypeScript suites read.
func suiteEnv() []string {
	py, _ := filepath.Abs("python") // as if installed: the examples run from elsewhere
	return append(os.Environ(),
		"PYTHONPATH="+py,
		"SIDECAR_URL="+open.API,
		"SIDECAR_OPS_URL="+open.Ops,
		"SIDECAR_TOKEN_URL="+guarded.API,
		"SIDECAR_TOKEN="+token,
	)
}

// need skips t when tool is missing, with the package's one notice line,
// except under CI=true, where .ci/run installs it and its absence fails.
func need(t *testing.T, ok bool, reason string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", reason)
	}
	redisstoretest.Skip(t, reason+"; CI=true makes them fail instead")
}

func onPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// runIn runs name in dir with the suites' environment and fails t with the
// whole output when it fails; it returns stdout.
func runIn(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = suiteEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v in %s: %v\nstdout:\n%s\nstderr:\n%s", name, args, dir, err, stdout.String(), stderr.String())
	}
	if testing.Verbose() {
		t.Logf("%s %v:\n%s%s", name, args, stdout.String(), stderr.String())
	}
	return stdout.String()
}
