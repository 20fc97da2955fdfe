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
// client connects, makes room: it closes the connection idle the longest
// (one that has sent no request yet, or is between requests), else it
// ends the slowest upload (a request whose body is still arriving, fewest
// bytes per second first), which is answered 408 and closed. Connections
// are shed only for a client that waits, and the other active ones (a
// request being served, a lock wait, a stream) never: slow uploads cannot
// lock new clients out. The process holds at most one connection beyond
// the cap (the one waiting for room); later ones wait in the kernel's
// accept queue, holding no file of the process.
type limitListener struct {
	net.Listener
	sem     chan struct{}
	mu      sync.Mutex
	idle    map[*limitConn]time.Time // idle since
	uploads map[*limitConn]*upload   // requests whose body is arriving
	closed  chan struct{}
	closeMu sync.Once
}

// upload is a request body being read: since when, and how many bytes
// have arrived.
type upload struct {
	start time.Time
	read  atomic.Int64
}

// shedRetry is how often a client waiting at the cap looks again for a
// connection to shed when none could be.
const shedRetry = 100 * time.Millisecond

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), idle: map[*limitConn]time.Time{},
		uploads: map[*limitConn]*upload{}, closed: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for admitted := false; !admitted; {
		select {
		case l.sem <- struct{}{}:
			admitted = true
			continue
		default:
		}
		// full, and a client waits: make room
		if !l.shedIdle() {
			l.shedSlowestUpload()
		}
		retry := time.NewTimer(shedRetry)
		select {
		case l.sem <- struct{}{}:
			admitted = true
		case <-retry.C:
		case <-l.closed:
			retry.Stop()
			c.Close()
			return nil, net.ErrClosed
		}
		retry.Stop()
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
func (l *limitListener) shedIdle() bool {
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
	if oldest == nil {
		return false
	}
	connectionsShed.WithLabelValues("idle").Inc()
	_ = oldest.Close()
	return true
}

// shedMinAge is how long an upload runs before it may be shed as slow: a
// body just begun has read nothing yet, and would rank below any trickle.
const shedMinAge = time.Second

// shedSlowestUpload ends the upload older than shedMinAge that has brought
// the fewest bytes per second, if any: its read deadline is
// moved to now, so its body read fails and the request is answered 408
// request_timeout; the connection then closes, giving its slot up.
func (l *limitListener) shedSlowestUpload() {
	now := time.Now()
	l.mu.Lock()
	var slowest *limitConn
	var lowest float64
	for c, u := range l.uploads {
		if now.Sub(u.start) < shedMinAge {
			continue // just begun (or waiting for budget room): not yet slow
		}
		rate := float64(u.read.Load()) / now.Sub(u.start).Seconds()
		if slowest == nil || rate < lowest {
			slowest, lowest = c, rate
		}
	}
	if slowest != nil {
		delete(l.uploads, slowest)
	}
	l.mu.Unlock()
	if slowest != nil {
		connectionsShed.WithLabelValues("slow_upload").Inc()
		_ = slowest.Conn.SetReadDeadline(now)
	}
}

// cutUploads ends every upload at once, as shedSlowestUpload ends one: at
// the end of the shutdown drain, a body still arriving fails its read, so
// its request is answered (503 shutting_down) before the listener closes.
func (l *limitListener) cutUploads() {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.uploads {
		_ = c.Conn.SetReadDeadline(now)
	}
}

// startUpload marks c as reading a request body until endUpload.
func (l *limitListener) startUpload(c *limitConn) *upload {
	u := &upload{start: time.Now()}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.closed.Load() {
		l.uploads[c] = u
	}
	return u
}

func (l *limitListener) endUpload(c *limitConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.uploads, c)
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
		c.l.endUpload(c)
		if !c.uncapped.Swap(true) {
			<-c.l.sem
		}
	}
	return err
}

// CloseWrite half-closes the connection, as the *net.TCPConn it wraps
// does: http.Server then closes a connection whose request body was not
// read whole (a 408, a 413) only after a pause, so its answer reaches the
// client instead of being lost to a reset.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
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

// watchUpload marks the request's connection as uploading while r's body
// is read (until it ends, or the returned func is called at the end of
// the request), so the listener can shed the slowest upload for a client
// waiting at the connection cap.
func watchUpload(r *http.Request) (end func()) {
	lc, ok := r.Context().Value(connKey{}).(*limitConn)
	if !ok || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return func() {}
	}
	u := lc.l.startUpload(lc)
	r.Body = &uploadBody{ReadCloser: r.Body, u: u, end: func() { lc.l.endUpload(lc) }}
	return func() { lc.l.endUpload(lc) }
}

// uploadBody counts a body's bytes as they arrive, and ends the upload at
// its end.
type uploadBody struct {
	io.ReadCloser
	u   *upload
	end func()
}

func (b *uploadBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.u.read.Add(int64(n))
	if err != nil {
		b.end()
	}
	return n, err
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
