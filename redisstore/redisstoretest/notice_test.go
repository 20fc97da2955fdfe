package redisstoretest_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// childEnv makes this test binary a child run without redis-server:
// "main" runs it under redisstoretest.Main, "plain" without.
const childEnv = "REDISSTORETEST_NOTICE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "plain" {
		os.Exit(m.Run())
	}
	os.Exit(redisstoretest.Main(m))
}

// TestSkipNoticeChild is the child's suite: two tests that need
// redis-server and one that needs a cluster.
func TestSkipNoticeChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestSkipNotice as a child without redis-server")
	}
	t.Run("a", func(t *testing.T) { redisstoretest.NewReal(t) })
	t.Run("b", func(t *testing.T) { redisstoretest.NewReal(t) })
	t.Run("cluster", func(t *testing.T) { redisstoretest.NewClusterServer(t) })
}

// runChild runs TestSkipNoticeChild with a PATH that has no redis-server,
// not verbose and without a terminal (as under `go test ./...`), and returns
// its stderr.
func runChild(t *testing.T, mode string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSkipNoticeChild$", "-test.count=1")
	cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir(), childEnv + "=" + mode}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no /dev/tty
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != "PASS" {
		t.Fatalf("child stdout %q, want PASS (skips pass)", got)
	}
	return stderr.String()
}

func TestSkipNotice(t *testing.T) {
	tests := []struct {
		mode string
		want string
	}{
		{"main", "redisstoretest: 3 tests skipped (" +
			"redis-server not on PATH (apt-get install redis-server): TestSkipNoticeChild/a, TestSkipNoticeChild/b; " +
			"redis-server or redis-cli not on PATH (apt-get install redis-server redis-tools): TestSkipNoticeChild/cluster); " +
			"`go test -v` lists them; REQUIRE_REAL_REDIS=1 makes them fail instead\n"},
		{"plain", "redisstoretest: tests skip: redis-server not on PATH (apt-get install redis-server) (the first: TestSkipNoticeChild/a); " +
			"`go test -v` lists them; REQUIRE_REAL_REDIS=1 makes them fail instead\n"},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			if got := runChild(t, tc.mode); got != tc.want {
				t.Fatalf("stderr\n%q\nwant one notice line\n%q", got, tc.want)
			}
		})
	}
}

// TestSkipNoticeUnderGoTest: the notice reaches `go test ./...`'s own
// output, which drops a passing package's stderr: run by the go command in
// package list mode, not verbose, without a terminal, into a pipe.
func TestSkipNoticeUnderGoTest(t *testing.T) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skipf("no go command at %s", gobin)
	}
	cmd := exec.Command(gobin, "test", "-count=1", "-run=^TestSkipNoticeChild$", ".")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool {
		for _, v := range []string{"PATH=", "GOFLAGS=", "REQUIRE_REAL_REDIS=", "CI="} {
			if strings.HasPrefix(e, v) {
				return true
			}
		}
		return false
	}), "PATH="+filepath.Dir(gobin), childEnv+"=main")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no /dev/tty
	out, err := cmd.CombinedOutput()                     // a pipe
	if err != nil {
		t.Fatalf("go test: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "redisstoretest: 3 tests skipped (") || !strings.Contains(string(out), "\nok  \t") {
		t.Fatalf("go test's output holds no notice line:\n%s", out)
	}
}
