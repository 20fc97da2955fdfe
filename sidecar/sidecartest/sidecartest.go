package sidecartest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Host is a running sidecar.
type Host struct {
	API  string // base URL of the API listener, e.g. http://127.0.0.1:41234
	Ops  string // base URL of the ops listener
	Host *sidecar.Host
	Conn *redisstore.Conn

	cancel   context.CancelFunc
	done     chan error
	observed bool // the test saw Run's result (Stop, Exited): the cleanup need not report it
}

// Start runs a host with the given modules against srv until the test ends,
// and waits until Redis is connected. env adds configuration (listeners are
// always free loopback ports).
func Start(t testing.TB, srv *redisstoretest.Server, env envconf.Env, factories ...sidecar.Factory) *Host {
	t.Helper()
	h := start(t, srv.Options(), env, factories)
	select {
	case <-h.Conn.Ready():
	case <-time.After(10 * time.Second):
		t.Fatalf("redis at %s not connected within 10s", srv.Addr)
	}
	return h
}

// StartURL runs a host against the Redis at redisURL, which need not be up
// yet, and returns at once (for tests of a sidecar that starts before its
// Redis).
func StartURL(t testing.TB, redisURL string, env envconf.Env, factories ...sidecar.Factory) *Host {
	t.Helper()
	return start(t, redisstore.Options{URL: redisURL, Port: 6379, SSLCertReqs: "required"}, env, factories)
}

func start(t testing.TB, opts redisstore.Options, env envconf.Env, factories []sidecar.Factory) *Host {
	t.Helper()
	full := envconf.Env{"SIDECAR_LISTEN_ADDR": "127.0.0.1:0", "SIDECAR_OPS_ADDR": "127.0.0.1:0", "LOG_LEVEL": "error"}
	for k, v := range env {
		full[k] = v
	}
	cfg, err := sidecar.LoadConfig(full)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	cfg.Redis = opts
	enabled, err := sidecar.Select(factories, cfg.Modules)
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	conn, err := redisstore.Open(cfg.Redis, logger)
	if err != nil {
		t.Fatalf("redisstore.Open: %v", err)
	}
	t.Cleanup(conn.Close)
	h, err := sidecar.NewHost(context.Background(), cfg, full, conn, logger, enabled)
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	th := &Host{Host: h, Conn: conn, cancel: cancel, done: make(chan error, 1)}
	go func() { th.done <- h.Run(ctx) }()
	api, ops := h.Addrs()
	th.API, th.Ops = "http://"+api, "http://"+ops
	t.Cleanup(func() {
		observed := th.observed
		if err := th.Stop(); err != nil && !observed {
			t.Errorf("stop sidecar: %v", err)
		}
	})
	return th
}

// Exited answers Run's result if the host stopped by itself (a startup
// timeout, say) within d, else false.
func (h *Host) Exited(d time.Duration) (error, bool) {
	select {
	case err := <-h.done:
		h.done <- err
		h.observed = true
		return err, true
	case <-time.After(d):
		return nil, false
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// Stop shuts the host down as SIGTERM does and returns Run's result. A host
// the test does not stop itself is stopped when the test ends, and a
// failed stop fails the test.
func (h *Host) Stop() error {
	h.observed = true
	h.cancel()
	select {
	case err := <-h.done:
		h.done <- err
		return err
	case <-time.After(15 * time.Second):
		return errors.New("host did not stop within 15s")
	}
}

// Reply is an HTTP answer, or the transport error when there was none.
type Reply struct {
	Status int
	Header http.Header
	Body   string
	Took   time.Duration // from sending the request to the whole body read
	Err    error         // set only by Client.Send: Do fails the test instead
}

// String is the answer for a test's log: "201 {...} (3ms)" or "error ...".
func (r Reply) String() string {
	if r.Err != nil {
		return "error " + r.Err.Error()
	}
	return fmt.Sprintf("%d %s (%s)", r.Status, strings.TrimSpace(r.Body), r.Took.Round(time.Millisecond))
}

// Code is the error envelope's code, or "" when the body is not one.
func (r Reply) Code() string {
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(r.Body), &env) != nil || env.Error.Message == "" {
		return ""
	}
	return env.Error.Code
}

// JSON decodes the body into v, failing the test if it is not JSON.
func (r Reply) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.Body), v); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
}

// Do sends one API request (path under the API base URL) with an optional
// JSON body and header pairs.
func (h *Host) Do(t testing.TB, method, path, body string, header ...string) Reply {
	t.Helper()
	return Do(t, method, h.API+path, body, header...)
}

// Metrics is the ops listener's /metrics text.
func (h *Host) Metrics(t testing.TB) string {
	t.Helper()
	r := Do(t, http.MethodGet, h.Ops+"/metrics", "")
	if r.Status != http.StatusOK {
		t.Fatalf("GET /metrics: %s", r)
	}
	return r.Body
}

// Do sends one request to a full URL, failing the test when no answer
// came; from the test's goroutine only (see Client for others).
func Do(t testing.TB, method, url, body string, header ...string) Reply {
	t.Helper()
	r := send(context.Background(), http.DefaultClient, method, url, body, header)
	if r.Err != nil && r.Status == 0 {
		t.Fatalf("%s %s: %v", method, url, r.Err)
	}
	return r
}

// Client sends requests to one base URL from any goroutine (load
// generators, waiters): it never fails the test, and a transport error is
// the Reply's Err. It owns its transport, closed when the test ends (or by
// HTTP.CloseIdleConnections, before a leak check).
type Client struct {
	Base string
	HTTP *http.Client
}

// NewClient returns a Client of base (Host.API, say) keeping up to 32 idle
// connections.
func NewClient(t testing.TB, base string) *Client {
	c := &Client{Base: base, HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}}
	t.Cleanup(c.HTTP.CloseIdleConnections)
	return c
}

// Send sends one request (path under Base) with an optional JSON body and
// header pairs.
func (c *Client) Send(ctx context.Context, method, path, body string, header ...string) Reply {
	return send(ctx, c.HTTP, method, c.Base+path, body, header)
}

// WaitServing sends GET path until it answers 200 and returns how long
// that took, failing the test after limit.
func (c *Client) WaitServing(t testing.TB, path string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var last Reply
	for time.Since(start) < limit {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last = c.Send(ctx, http.MethodGet, path, "")
		cancel()
		if last.Err == nil && last.Status == http.StatusOK {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("GET %s did not succeed within %s; last answer: %s", path, limit, last)
	return 0
}

func send(ctx context.Context, hc *http.Client, method, url, body string, header []string) Reply {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return Reply{Err: err}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Reply{Err: err, Took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b), Took: time.Since(start), Err: err}
}
