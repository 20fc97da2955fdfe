package docs_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// README's first block shows the two commands, run then test, and the run
// line gives a process that SIGTERM stops: it exits 0 with "stopped" as
// its last log line.
func TestReadmeRunLineStopsOnSIGTERM(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	first := block(t, "../README.md", strings.SplitN(string(raw), "\n", 2)[0], "sh")
	lines := strings.Split(strings.TrimSpace(first), "\n")
	const build, run = "go build -o bin/sidecar ./cmd/sidecar", "bin/sidecar"
	if len(lines) != 2 || !strings.HasPrefix(lines[0], build+" && "+run+" ") || !strings.HasPrefix(lines[1], "go test ./... ") {
		t.Fatalf("README's first block:\n%s\nwant the run line %q, then go test ./...", first, build+" && "+run)
	}

	bin := filepath.Join(t.TempDir(), "sidecar")
	cmd := exec.Command("go", strings.Fields(strings.Replace(build, "bin/sidecar", bin, 1))[1:]...)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	api, _ := redisstoretest.FreePort()
	ops, _ := redisstoretest.FreePort()
	var log bytes.Buffer
	p := exec.Command(bin)
	p.Env = []string{"PATH=" + os.Getenv("PATH"), fmt.Sprintf("SIDECAR_LISTEN_ADDR=127.0.0.1:%d", api), fmt.Sprintf("SIDECAR_OPS_ADDR=127.0.0.1:%d", ops)}
	p.Stderr = &log
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	t.Cleanup(func() { _ = p.Process.Kill() })
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", ops)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, err := http.Get(ready); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 10s", ready)
		}
	}
	_ = p.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM: %v\n%s", err, log.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("still running 15s after SIGTERM")
	}
	all := strings.Split(strings.TrimSpace(log.String()), "\n")
	if last := all[len(all)-1]; !strings.Contains(last, `"msg":"stopped"`) {
		t.Fatalf("last log line %q, want \"stopped\"", last)
	}
}
