package redisstoretest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// Backend names, as used in subtest names.
const (
	Real = "redis-server"
	Mini = "miniredis"
)

// Server is one Redis for one test.
type Server struct {
	Backend string
	Addr    string // host:port on loopback

	// Mini is the embedded server (nil for a real one): tests may move its
	// clock with SetTime.
	Mini *miniredis.Miniredis
	// Cluster is the whole cluster when Backend is ClusterBackend (Addr is
	// its first node; URL, Options, Client, Kill and Start act on all).
	Cluster *Cluster

	t      testing.TB
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	dir    string
	args   []string
}

// RequireReal reports whether REQUIRE_REAL_REDIS=1 forbids the fallback.
func RequireReal() bool { return os.Getenv("REQUIRE_REAL_REDIS") == "1" }

// RealAvailable reports whether redis-server is on PATH.
func RealAvailable() bool {
	_, err := exec.LookPath("redis-server")
	return err == nil
}

// New starts a fresh Redis for t: real when possible, else miniredis.
func New(t testing.TB) *Server {
	t.Helper()
	if RealAvailable() {
		return NewReal(t)
	}
	if RequireReal() {
		t.Fatal("REQUIRE_REAL_REDIS=1 but redis-server is not on PATH (apt-get install redis-server)")
	}
	return NewMini(t)
}

// Each runs f once per available backend, as subtests named after it, so the
// tests that matter prove the behaviour on a real Redis and on the embedded
// default alike.
func Each(t *testing.T, f func(t *testing.T, s *Server)) {
	t.Helper()
	t.Run(Mini, func(t *testing.T) { f(t, NewMini(t)) })
	t.Run(Real, func(t *testing.T) { f(t, NewReal(t)) })
}

// NewMini starts a miniredis whose TTLs follow the wall clock, the same way
// the sidecar's embedded mode runs it.
func NewMini(t testing.TB) *Server {
	t.Helper()
	m, err := redisstore.StartEmbedded()
	if err != nil {
		t.Fatalf("start miniredis: %v", err)
	}
	t.Cleanup(m.Close)
	return &Server{Backend: Mini, Addr: m.Addr(), Mini: m, t: t}
}

// NewReal starts a redis-server on a free loopback port, with no persistence,
// and stops it when the test ends. Extra args are passed to redis-server
// (e.g. "--appendonly", "yes").
func NewReal(t testing.TB, extraArgs ...string) *Server {
	t.Helper()
	requireBinary(t)
	var lastErr error
	for range 5 { // a free port can be taken between asking and binding
		port, err := FreePort()
		if err != nil {
			t.Fatalf("find free port: %v", err)
		}
		s, err := startReal(t, port, extraArgs)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("start redis-server: %v", lastErr)
	return nil
}

// NewRealOnPort starts a redis-server on the given loopback port, for tests
// of a sidecar that was started before its Redis.
func NewRealOnPort(t testing.TB, port int, extraArgs ...string) *Server {
	t.Helper()
	requireBinary(t)
	s, err := startReal(t, port, extraArgs)
	if err != nil {
		t.Fatalf("start redis-server on port %d: %v", port, err)
	}
	return s
}

func requireBinary(t testing.TB) {
	t.Helper()
	if !RealAvailable() {
		if RequireReal() {
			t.Fatal("REQUIRE_REAL_REDIS=1 but redis-server is not on PATH")
		}
		skip(t, "redis-server not on PATH (apt-get install redis-server)")
	}
}

func startReal(t testing.TB, port int, extraArgs []string) (*Server, error) {
	s, err := startIn(t.TempDir(), port, extraArgs)
	if err != nil {
		return nil, err
	}
	s.t = t
	t.Cleanup(s.Kill)
	return s, nil
}

// startIn starts a redis-server in dir on port; the caller stops it.
func startIn(dir string, port int, extraArgs []string) (*Server, error) {
	s := &Server{Backend: Real, dir: dir}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s.args = append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--daemonize", "no", "--logfile", "",
	}, extraArgs...)
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// URL is the redis:// URL of the server.
func (s *Server) URL() string {
	if s.Cluster != nil {
		return s.Cluster.URL()
	}
	return "redis://" + s.Addr
}

// Layout is the key layout the sidecar uses on this server.
func (s *Server) Layout() redisstore.Layout { return redisstore.Layout{Cluster: s.Cluster != nil} }

// DBSize counts the keys in the server (summed over a cluster's masters).
func (s *Server) DBSize(t testing.TB) int64 {
	t.Helper()
	if s.Cluster != nil {
		n, err := s.Cluster.DBSize(t.Context())
		if err != nil {
			t.Fatalf("dbsize: %v", err)
		}
		return n
	}
	c := s.Client(t)
	n, err := c.Do(t.Context(), c.B().Dbsize().Build()).AsInt64()
	if err != nil {
		t.Fatalf("dbsize: %v", err)
	}
	return n
}

// Keys lists the server's keys (of every master of a cluster) matching
// pattern: KEYS, for tests' small data sets.
func (s *Server) Keys(t testing.TB, pattern string) []string {
	t.Helper()
	if s.Cluster != nil {
		masters, err := s.Cluster.Masters(t.Context())
		if err != nil {
			t.Fatalf("keys: %v", err)
		}
		var out []string
		for _, m := range masters {
			ks, err := s.Cluster.Do(t.Context(), m, "KEYS", pattern).AsStrSlice()
			if err != nil {
				t.Fatalf("keys on %s: %v", m, err)
			}
			out = append(out, ks...)
		}
		return out
	}
	c := s.Client(t)
	out, err := c.Do(t.Context(), c.B().Keys().Pattern(pattern).Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("keys: %v", err)
	}
	return out
}

// Start (re)starts a real server on its port and waits until it answers PING.
// For miniredis it restarts the embedded server on the same address.
func (s *Server) Start() error {
	if s.Mini != nil {
		return s.Mini.Restart()
	}
	if s.Cluster != nil {
		for i := range s.Cluster.Nodes {
			if !s.Cluster.alive(i) {
				if err := s.Cluster.Start(i); err != nil {
					return err
				}
			}
		}
		return s.Cluster.WaitOK(30 * time.Second)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out bytes.Buffer
	cmd := exec.Command("redis-server", s.args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited at start: %s", out.String())
		default:
		}
		if ping(s.Addr) == nil {
			s.cmd, s.exited = cmd, exited
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server on %s did not answer PING within 10s: %s", s.Addr, out.String())
}

// Kill stops the server at once (SIGKILL for a real one), as a crash would.
func (s *Server) Kill() {
	if s.Mini != nil {
		s.Mini.Close()
		return
	}
	if s.Cluster != nil {
		for i := range s.Cluster.Nodes {
			s.Cluster.Kill(i)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Client returns a rueidis client for assertions on what is in Redis.
func (s *Server) Client(t testing.TB) rueidis.Client {
	t.Helper()
	if s.Cluster != nil {
		return s.Cluster.Client(t)
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true, DisableRetry: true, ForceSingleClient: true})
	if err != nil {
		t.Fatalf("connect to %s: %v", s.Addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// Options returns the sidecar's Redis options pointing at this server.
func (s *Server) Options() redisstore.Options {
	if s.Cluster != nil {
		return s.Cluster.Options()
	}
	return redisstore.Options{URL: s.URL(), Port: 6379, SSLCertReqs: "required", Standalone: s.Mini != nil}
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping sends an inline PING and expects +PONG, or -NOAUTH from a server
// started with --requirepass (it answers, so it is up).
func ping(addr string) error {
	reply, err := RawCommand(addr, "PING", 200*time.Millisecond)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(reply, "+PONG") && !strings.HasPrefix(reply, "-NOAUTH") {
		return fmt.Errorf("unexpected reply %q", reply)
	}
	return nil
}

// RawCommand sends one inline command ("DEBUG SLEEP 3") to addr on a
// connection of its own, not the sidecar's nor a client's, and returns the
// first line of the reply ("+OK"), all within timeout.
func RawCommand(addr, cmd string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

// Dir is the server's working directory (for AOF files), empty for miniredis.
func (s *Server) Dir() string { return s.dir }

// Conn opens the sidecar's connection (redisstore.Open) to the server, waits
// until it is connected, and closes it when the test ends.
func (s *Server) Conn(t testing.TB) *redisstore.Conn {
	t.Helper()
	return OpenReady(t, s.Options())
}

// OpenReady opens a redisstore.Conn with opts and waits up to 10 s for it to
// connect; it is closed when the test ends.
func OpenReady(t testing.TB, opts redisstore.Options) *redisstore.Conn {
	t.Helper()
	c, err := redisstore.Open(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	select {
	case <-c.Ready():
	case <-time.After(10 * time.Second):
		t.Fatalf("not connected within 10s: %s", c.LastError())
	}
	return c
}

// StreamEvent is one entry of a session or user event stream as the write
// scripts store it: its type (field t) and its data (field d, JSON).
type StreamEvent struct {
	ID   string
	Type string
	Data map[string]any
}

// StreamEvents reads the event stream at key (at most 10 000 entries, a
// test's bounded read), failing the test on a read error or data that is
// not a JSON object.
func StreamEvents(t testing.TB, c rueidis.Client, key string) []StreamEvent {
	t.Helper()
	entries, err := c.Do(context.Background(), c.B().Xrange().Key(key).Start("-").End("+").Count(10000).Build()).AsXRange()
	if err != nil {
		t.Fatalf("XRANGE %s: %v", key, err)
	}
	out := make([]StreamEvent, 0, len(entries))
	for _, e := range entries {
		ev := StreamEvent{ID: e.ID, Type: e.FieldValues["t"]}
		if err := json.Unmarshal([]byte(e.FieldValues["d"]), &ev.Data); err != nil {
			t.Fatalf("event %s of %s: data %q: %v", e.ID, key, e.FieldValues["d"], err)
		}
		out = append(out, ev)
	}
	return out
}

// Snapshot is the state of each of keys as a line: its type, its value
// (a list's elements, a hash's fields sorted, a zset's members with
// scores, a stream's events, a string) and whether it has a TTL; for tests
// that check a refused write changed nothing. Each read is a test's
// bounded read of keys it wrote itself.
func Snapshot(t testing.TB, c rueidis.Client, keys ...string) []string {
	t.Helper()
	ctx := context.Background()
	out := make([]string, 0, len(keys))
	for _, key := range keys {
		typ, err := c.Do(ctx, c.B().Type().Key(key).Build()).ToString()
		if err != nil {
			t.Fatalf("TYPE %s: %v", key, err)
		}
		var v any
		switch typ {
		case "list":
			v, err = c.Do(ctx, c.B().Lrange().Key(key).Start(0).Stop(9999).Build()).AsStrSlice()
		case "hash":
			var m map[string]string
			m, err = c.Do(ctx, c.B().Hgetall().Key(key).Build()).AsStrMap()
			v = fmt.Sprint(m) // fmt prints a map sorted by key: a hash's own order is not stable
		case "zset":
			v, err = c.Do(ctx, c.B().Zrange().Key(key).Min("0").Max("9999").Withscores().Build()).ToAny()
		case "stream":
			v = StreamEvents(t, c, key)
		case "string":
			v, err = c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
		}
		if err != nil {
			t.Fatalf("reading %s (%s): %v", key, typ, err)
		}
		pttl, err := c.Do(ctx, c.B().Pttl().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatalf("PTTL %s: %v", key, err)
		}
		out = append(out, fmt.Sprintf("%s %s %v ttl %v", key, typ, v, pttl > 0))
	}
	return out
}
