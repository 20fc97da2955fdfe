package sidecar

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The pod's budget: the sidecar shares a pod with an agent whose bugs it must
// survive. Every bound here has a setting (config.go) and a row in
// docs/operations.md.

// fileReserve is what the connection cap leaves of the file limit for the
// ops listener (kubelet, Prometheus), the Redis connections and files.
const fileReserve = 64

// defaultMaxConnections derives the API connection cap from RLIMIT_NOFILE (the
// soft limit, which Go raises to the hard limit at start): three quarters of
// what is left after the reserve, at least 16.
func defaultMaxConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<20 {
		return 1 << 14
	}
	return max(16, (int(lim.Cur)-fileReserve)*3/4)
}

// limitListener serves at most cap connections at once (as
// golang.org/x/net/netutil.LimitListener does) and, when full and a new
// client connects, closes the connection idle the longest (one that has
// sent no request yet, or is between requests) to make room: idle
// connections are shed only for a client that waits, and active ones (a
// lock wait, a stream) never. The process holds at most one connection
// beyond the cap (the one waiting for room); later ones wait in the
// kernel's accept queue, holding no file of the process.
type limitListener struct {
	net.Listener
	sem     chan struct{}
	mu      sync.Mutex
	idle    map[*limitConn]time.Time // idle since
	closed  chan struct{}
	closeMu sync.Once
	shed    atomic.Int64
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), idle: map[*limitConn]time.Time{}, closed: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	select {
	case l.sem <- struct{}{}:
	default:
		// full, and a client waits: make room
		l.shedIdle()
		select {
		case l.sem <- struct{}{}:
		case <-l.closed:
			c.Close()
			return nil, net.ErrClosed
		}
	}
	lc := &limitConn{Conn: c, l: l}
	l.setIdle(lc, true) // idle until its first request arrives
	return lc, nil
}

func (l *limitListener) Close() error {
	l.closeMu.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// shedIdle closes the connection idle the longest, if any.
func (l *limitListener) shedIdle() {
	l.mu.Lock()
	var oldest *limitConn
	var since time.Time
	for c, t := range l.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	if oldest != nil {
		delete(l.idle, oldest)
	}
	l.mu.Unlock()
	if oldest != nil {
		l.shed.Add(1)
		_ = oldest.Close()
	}
}

func (l *limitListener) setIdle(c *limitConn, idle bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if idle && !c.closed.Load() {
		l.idle[c] = time.Now()
	} else {
		delete(l.idle, c)
	}
}

// connState is the http.Server's ConnState hook: it tells the listener which
// connections are idle.
func (l *limitListener) connState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	switch s {
	case http.StateActive, http.StateHijacked, http.StateClosed:
		l.setIdle(lc, false)
	case http.StateIdle:
		l.setIdle(lc, true)
	}
}

type limitConn struct {
	net.Conn
	l        *limitListener
	closed   atomic.Bool
	uncapped atomic.Bool // its slot was given back (a stream); closed after it
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.setIdle(c, false)
		if !c.uncapped.Swap(true) {
			<-c.l.sem
		}
	}
	return err
}

// leaveCap gives the connection's slot back: a stream (its own cap,
// SIDECAR_SSE_MAX_STREAMS) does not count as an API connection. The
// connection is closed after the stream (Connection: close).
func (c *limitConn) leaveCap() {
	if !c.uncapped.Swap(true) {
		<-c.l.sem
	}
}

// connKey holds a request's *limitConn in its context (http.Server's
// ConnContext).
type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// leaveConnCap takes the request's connection out of the connection cap.
func leaveConnCap(ctx context.Context) {
	if lc, ok := ctx.Value(connKey{}).(*limitConn); ok {
		lc.leaveCap()
	}
}

// shedOverload answers 503 overloaded, before any work, when MaxInflight
// requests are already being served or the heap is at the memory limit, so
// that a burst queues nowhere without bound.
func (h *Host) shedOverload(next http.Handler) http.Handler {
	inflight := make(chan struct{}, h.cfg.MaxInflight)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if memoryFull() {
			overloaded.WithLabelValues("memory").Inc()
			WriteError(w, Errorf(http.StatusServiceUnavailable, "overloaded", "the sidecar is at its memory limit; retry shortly"))
			return
		}
		if h.isStream(r) {
			// A stream is not a request in flight: the module caps its
			// streams itself.
			next.ServeHTTP(w, r)
			return
		}
		select {
		case inflight <- struct{}{}:
			defer func() { <-inflight }()
			next.ServeHTTP(w, r)
		default:
			overloaded.WithLabelValues("inflight").Inc()
			WriteError(w, Errorf(http.StatusServiceUnavailable, "overloaded",
				"the sidecar is serving %d requests already (SIDECAR_MAX_INFLIGHT); retry shortly", h.cfg.MaxInflight))
		}
	})
}

// isStream reports whether r is for a Stream route.
func (h *Host) isStream(r *http.Request) bool {
	_, pattern := h.streamRoutes.Handler(r)
	return pattern != ""
}

// memoryFull reports whether the Go heap holds more than 95% of the memory
// limit (GOMEMLIMIT, or the one set from the container at start). With no
// limit it is never full.
func memoryFull() bool {
	limit := debug.SetMemoryLimit(-1)
	if limit <= 0 || limit == 1<<63-1 {
		return false
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() > uint64(limit)/100*95
}

// setMemoryLimit gives the Go runtime a soft memory limit of 90% of the
// container's (cgroup v2 memory.max, or v1 memory.limit_in_bytes) unless
// GOMEMLIMIT is set, so the garbage collector works harder before the pod is
// OOM-killed. It returns the limit set (0: none).
func setMemoryLimit(logger *slog.Logger, getenv func(string) string) int64 {
	return setMemoryLimitFrom(logger, getenv, cgroupMemoryFiles)
}

// cgroupMemoryFiles are where a container's memory limit is read: cgroup v2,
// then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

func setMemoryLimitFrom(logger *slog.Logger, getenv func(string) string, files []string) int64 {
	if getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<50 { // "max", or v1's "no limit"
			return 0
		}
		limit := n / 10 * 9
		debug.SetMemoryLimit(limit)
		logger.Info("memory limit from the container", "limit_bytes", limit, "container_bytes", n)
		return limit
	}
	return 0
}

// drainBound is how much of a refused body (413) the sidecar still reads
// and discards, so the client, still sending, reads the answer instead of a
// connection reset (nginx's lingering close).
const drainBound = 16 << 20

// drain reads and discards what is left of body, up to drainBound.
func drain(body io.Reader) {
	if body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, body, drainBound)
}
