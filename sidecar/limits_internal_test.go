package sidecar

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"
)

func TestMemoryLimitFromTheContainer(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	dir := t.TempDir()
	write := func(name, v string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	noEnv := func(string) string { return "" }
	tests := []struct {
		name  string
		files []string
		env   func(string) string
		want  int64
	}{
		{"cgroup v2 limit: 90% of it", []string{write("v2", "134217728\n")}, noEnv, 134217728 / 10 * 9},
		{"cgroup v2 without a limit", []string{write("max", "max\n")}, noEnv, 0},
		{"v1 'no limit'", []string{filepath.Join(dir, "absent"), write("v1", "9223372036854771712\n")}, noEnv, 0},
		{"no cgroup file", []string{filepath.Join(dir, "absent")}, noEnv, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(prev)
			if got := setMemoryLimitFrom(logger, tc.env, tc.files); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
			if tc.want > 0 && debug.SetMemoryLimit(-1) != tc.want {
				t.Fatalf("runtime limit %d, want %d", debug.SetMemoryLimit(-1), tc.want)
			}
		})
	}
	t.Run("GOMEMLIMIT wins", func(t *testing.T) {
		debug.SetMemoryLimit(prev)
		env := func(k string) string {
			if k == "GOMEMLIMIT" {
				return "100MiB"
			}
			return ""
		}
		if got := setMemoryLimitFrom(logger, env, []string{write("v2b", "134217728")}); got != prev {
			t.Fatalf("with GOMEMLIMIT set the container's limit was applied: %d", got)
		}
	})
}

// recordConn is a connection whose read deadline shows whether it was shed.
type recordConn struct {
	net.Conn
	shed bool
}

func (c *recordConn) SetReadDeadline(time.Time) error { c.shed = true; return nil }

// The slowest upload is shed, never one just begun: a body whose first
// bytes have not arrived yet (or that waits for budget room) reads nothing
// so far and would rank below any trickle.
func TestShedSpareAFreshUpload(t *testing.T) {
	l := &limitListener{uploads: map[*limitConn]*upload{}}
	now := time.Now()
	conns := map[string]*recordConn{}
	add := func(name string, age time.Duration, read int64) {
		rc := &recordConn{}
		conns[name] = rc
		u := &upload{start: now.Add(-age)}
		u.read.Store(read)
		l.uploads[&limitConn{Conn: rc, l: l}] = u
	}
	add("trickle", 10*time.Second, 10)
	add("steady", 10*time.Second, 1<<20)
	add("fresh", 10*time.Millisecond, 0)
	l.shedSlowestUpload()
	for name, c := range conns {
		if c.shed != (name == "trickle") {
			t.Errorf("%s shed: %v; want only the trickle shed", name, c.shed)
		}
	}
}
