package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// kvModule is a small real module for host tests: it stores values in Redis
// through the same Conn the product's modules use.
type kvModule struct {
	redis  *redisstore.Conn
	closed *atomic.Int32
}

type kvBody struct {
	Value string `json:"value"`
	TTL   int    `json:"ttl_seconds,omitempty"`
}

func (m *kvModule) Name() string { return "kv" }

func (m *kvModule) Routes() []sidecar.Route {
	return []sidecar.Route{
		{Pattern: "PUT /v1/kv/{key}", Handler: m.put},
		{Pattern: "GET /v1/kv/{key}", Handler: m.get},
		{Pattern: "GET /v1/panic", Handler: func(http.ResponseWriter, *http.Request) error { panic("boom") }},
		{Pattern: "GET /v1/slow", Handler: m.slow},
	}
}

func (m *kvModule) Close(context.Context) error {
	if m.closed != nil {
		m.closed.Add(1)
	}
	return nil
}

func (m *kvModule) put(w http.ResponseWriter, r *http.Request) error {
	key, err := sidecar.PathID(r, "key")
	if err != nil {
		return err
	}
	var body kvBody
	if err := sidecar.DecodeJSON(r, &body); err != nil {
		return err
	}
	c, err := m.redis.Client()
	if err != nil {
		return err
	}
	if err := c.Do(r.Context(), c.B().Set().Key("kv:"+key).Value(body.Value).Build()).Error(); err != nil {
		return redisstore.Wrap("set", err)
	}
	sidecar.WriteJSON(w, http.StatusOK, body)
	return nil
}

func (m *kvModule) get(w http.ResponseWriter, r *http.Request) error {
	key, err := sidecar.PathID(r, "key")
	if err != nil {
		return err
	}
	c, err := m.redis.Client()
	if err != nil {
		return err
	}
	v, err := c.Do(r.Context(), c.B().Get().Key("kv:"+key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return sidecar.NotFound("no key %s", key)
	}
	if err != nil {
		return redisstore.Wrap("get", err)
	}
	sidecar.WriteJSON(w, http.StatusOK, kvBody{Value: v})
	return nil
}

func (m *kvModule) slow(w http.ResponseWriter, r *http.Request) error {
	select {
	case <-time.After(300 * time.Millisecond):
		sidecar.WriteJSON(w, http.StatusOK, map[string]string{"slept": "300ms"})
		return nil
	case <-r.Context().Done():
		return r.Context().Err()
	}
}

func kvFactory(closed *atomic.Int32) sidecar.Factory {
	return sidecar.Factory{Name: "kv", New: func(_ context.Context, d sidecar.Deps) (sidecar.Module, error) {
		return &kvModule{redis: d.Redis, closed: closed}, nil
	}}
}

// echoModule has no Redis use; it shows that modules are enabled apart.
type echoModule struct{}

func (echoModule) Name() string { return "echo" }
func (echoModule) Routes() []sidecar.Route {
	return []sidecar.Route{{Pattern: "POST /v1/echo", Handler: func(w http.ResponseWriter, r *http.Request) error {
		var v map[string]any
		if err := sidecar.DecodeJSON(r, &v); err != nil {
			return err
		}
		sidecar.WriteJSON(w, http.StatusOK, v)
		return nil
	}}}
}

var echoFactory = sidecar.Factory{Name: "echo", New: func(context.Context, sidecar.Deps) (sidecar.Module, error) {
	return echoModule{}, nil
}}

// testHost is a running host on loopback ports.
type testHost struct {
	api, ops string
	host     *sidecar.Host
	conn     *redisstore.Conn
	cancel   context.CancelFunc
	done     chan error
}

// startHost runs a host with env (plus loopback listeners on free ports)
// against redisURL, until the test ends, and waits until Redis is connected.
func startHost(t *testing.T, redisURL string, env envconf.Env, factories ...sidecar.Factory) *testHost {
	t.Helper()
	th := startHostEarly(t, redisURL, env, factories...)
	select {
	case <-th.conn.Ready():
	case <-time.After(10 * time.Second):
		t.Fatalf("redis at %s not connected within 10s", redisURL)
	}
	return th
}

// startHostEarly is startHost without waiting for Redis.
func startHostEarly(t *testing.T, redisURL string, env envconf.Env, factories ...sidecar.Factory) *testHost {
	t.Helper()
	full := envconf.Env{"SIDECAR_LISTEN_ADDR": "127.0.0.1:0", "SIDECAR_OPS_ADDR": "127.0.0.1:0", "REDIS_URL": redisURL, "LOG_LEVEL": "error"}
	for k, v := range env {
		full[k] = v
	}
	cfg, err := sidecar.LoadConfig(full)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	enabled, err := sidecar.Select(factories, cfg.Modules)
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	conn, err := redisstore.Open(cfg.Redis, logger)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(conn.Close)
	h, err := sidecar.NewHost(t.Context(), cfg, full, conn, logger, enabled)
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	th := &testHost{host: h, conn: conn, cancel: cancel, done: make(chan error, 1)}
	go func() { th.done <- h.Run(ctx) }()
	th.api, th.ops = h.Addrs()
	t.Cleanup(func() { _ = th.stop() })
	return th
}

// stop cancels Run (as SIGTERM does) and returns its result.
func (th *testHost) stop() error {
	th.cancel()
	select {
	case err := <-th.done:
		th.done <- err
		return err
	case <-time.After(15 * time.Second):
		return errors.New("host did not stop within 15s")
	}
}

type reply struct {
	status int
	header http.Header
	body   string
}

// errCode extracts error.code from an envelope ("" if the body is not one).
func (r reply) errCode() string {
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(r.body), &env) != nil || env.Error.Message == "" {
		return ""
	}
	return env.Error.Code
}

func do(t *testing.T, method, url, body string, header ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHostServesModuleRoutesAgainstRedis(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, s *redisstoretest.Server) {
		th := startHost(t, s.URL(), nil, kvFactory(nil))
		base := "http://" + th.api
		if r := do(t, "PUT", base+"/v1/kv/k1", `{"value":"v1"}`, "Content-Type", "application/json"); r.status != 200 {
			t.Fatalf("PUT: got %d %s, want 200", r.status, r.body)
		}
		got, err := s.Client(t).Do(t.Context(), rueidis.Client.B(s.Client(t)).Get().Key("kv:k1").Build()).ToString()
		if err != nil || got != "v1" {
			t.Fatalf("Redis holds %q (%v), want v1", got, err)
		}
		if r := do(t, "GET", base+"/v1/kv/k1", ""); r.status != 200 || !strings.Contains(r.body, `"v1"`) {
			t.Fatalf("GET: got %d %s", r.status, r.body)
		}
		if r := do(t, "GET", base+"/v1/kv/nope", ""); r.status != 404 || r.errCode() != "not_found" {
			t.Fatalf("GET missing: got %d %s, want 404 not_found", r.status, r.body)
		}
	})
}

func TestModulesEnabledBySIDECAR_MODULES(t *testing.T) {
	s := redisstoretest.New(t)
	tests := []struct {
		modules          string
		wantKV, wantEcho bool
	}{
		{modules: "all", wantKV: true, wantEcho: true},
		{modules: "", wantKV: true, wantEcho: true},
		{modules: "kv", wantKV: true, wantEcho: false},
		{modules: "echo", wantKV: false, wantEcho: true},
		{modules: " ECHO , kv ,echo", wantKV: true, wantEcho: true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.modules), func(t *testing.T) {
			th := startHost(t, s.URL(), envconf.Env{"SIDECAR_MODULES": tc.modules}, kvFactory(nil), echoFactory)
			base := "http://" + th.api
			// A kv key that does not exist is the module's 404 ("no key")
			// when kv is enabled and the mux's "no such route" otherwise.
			kv := do(t, "GET", base+"/v1/kv/absent", "")
			if got := strings.Contains(kv.body, "no key"); got != tc.wantKV {
				t.Errorf("kv enabled = %v, want %v (%d %s)", got, tc.wantKV, kv.status, kv.body)
			}
			echo := do(t, "POST", base+"/v1/echo", `{"a":1}`)
			if got := echo.status == 200; got != tc.wantEcho {
				t.Errorf("echo enabled = %v, want %v (%d %s)", got, tc.wantEcho, echo.status, echo.body)
			}
		})
	}
}

func TestSelectRejectsUnknownModule(t *testing.T) {
	_, err := sidecar.Select([]sidecar.Factory{kvFactory(nil), echoFactory}, "kv,sessionz")
	if err == nil || !strings.HasPrefix(err.Error(), "SIDECAR_MODULES: ") || !strings.Contains(err.Error(), `"sessionz"`) {
		t.Fatalf("got %v, want an error naming SIDECAR_MODULES and the unknown name", err)
	}
	if _, err := sidecar.Select(nil, ","); err == nil || !strings.HasPrefix(err.Error(), "SIDECAR_MODULES: ") {
		t.Fatalf("empty list: got %v, want an error naming SIDECAR_MODULES", err)
	}
}

func TestFailedModuleClosesTheOnesBuilt(t *testing.T) {
	var closed atomic.Int32
	failing := sidecar.Factory{Name: "bad", New: func(context.Context, sidecar.Deps) (sidecar.Module, error) {
		return nil, errors.New("cannot provision")
	}}
	conn, err := redisstore.Open(redisstoretest.New(t).Options(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cfg, _ := sidecar.LoadConfig(envconf.Env{})
	_, err = sidecar.NewHost(t.Context(), cfg, nil, conn, slog.New(slog.NewTextHandler(io.Discard, nil)), []sidecar.Factory{kvFactory(&closed), failing})
	if err == nil || !strings.Contains(err.Error(), "module bad: cannot provision") {
		t.Fatalf("got %v, want the failing module named", err)
	}
	if closed.Load() != 1 {
		t.Fatalf("kv module closed %d times, want 1", closed.Load())
	}
}

func TestConflictingRoutesAreAnError(t *testing.T) {
	conn, err := redisstore.Open(redisstoretest.New(t).Options(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cfg, _ := sidecar.LoadConfig(envconf.Env{})
	twin := kvFactory(nil)
	twin.Name = "kv2"
	_, err = sidecar.NewHost(t.Context(), cfg, nil, conn, slog.New(slog.NewTextHandler(io.Discard, nil)), []sidecar.Factory{kvFactory(nil), twin})
	if err == nil || !strings.Contains(err.Error(), "module kv2: route") {
		t.Fatalf("got %v, want a route conflict naming kv2", err)
	}
}

func TestBearerToken(t *testing.T) {
	th := startHost(t, redisstoretest.New(t).URL(), envconf.Env{"SIDECAR_API_TOKEN": "s3cret-token"}, kvFactory(nil))
	base := "http://" + th.api
	tests := []struct {
		name   string
		header []string
		want   int
	}{
		{"none", nil, 401},
		{"wrong", []string{"Authorization", "Bearer s3cret-tokem"}, 401},
		{"prefix of the token", []string{"Authorization", "Bearer s3cret"}, 401},
		{"not bearer", []string{"Authorization", "Basic s3cret-token"}, 401},
		{"right", []string{"Authorization", "Bearer s3cret-token"}, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "GET", base+"/v1/kv/absent", "", tc.header...)
			if r.status != tc.want {
				t.Fatalf("got %d %s, want %d", r.status, r.body, tc.want)
			}
			if tc.want == 401 && (r.errCode() != "unauthorized" || r.header.Get("WWW-Authenticate") == "") {
				t.Fatalf("got %s / WWW-Authenticate %q, want the unauthorized envelope and challenge", r.body, r.header.Get("WWW-Authenticate"))
			}
		})
	}
	// Unknown routes do not leak their existence to unauthenticated callers.
	if r := do(t, "GET", base+"/v1/nothing-here", ""); r.status != 401 {
		t.Fatalf("unknown route without token: got %d, want 401", r.status)
	}
	// Probes and metrics stay open for the kubelet and Prometheus.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := do(t, "GET", "http://"+th.ops+p, ""); r.status != 200 {
			t.Fatalf("%s: got %d, want 200 without a token", p, r.status)
		}
	}
}

func TestBadRequestsGetTheEnvelopeAndWriteNothing(t *testing.T) {
	s := redisstoretest.New(t)
	th := startHost(t, s.URL(), envconf.Env{"SIDECAR_MAX_BODY_BYTES": "64"}, kvFactory(nil), echoFactory)
	base := "http://" + th.api
	json := []string{"Content-Type", "application/json"}
	tests := []struct {
		name, method, path, body string
		header                   []string
		status                   int
		code                     string
	}{
		{"id with colon", "PUT", "/v1/kv/a:b", `{"value":"x"}`, json, 400, "invalid_id"},
		{"id with brace", "PUT", "/v1/kv/a%7Bb%7D", `{"value":"x"}`, json, 400, "invalid_id"},
		{"id too long", "PUT", "/v1/kv/" + strings.Repeat("a", 129), `{"value":"x"}`, json, 400, "invalid_id"},
		{"id with space", "PUT", "/v1/kv/a%20b", `{"value":"x"}`, json, 400, "invalid_id"},
		{"unknown field", "PUT", "/v1/kv/k", `{"value":"x","vaule":"y"}`, json, 400, "unknown_field"},
		{"wrong type", "PUT", "/v1/kv/k", `{"value":5}`, json, 400, "invalid_field"},
		{"integer as string", "PUT", "/v1/kv/k", `{"value":"x","ttl_seconds":"5"}`, json, 400, "invalid_field"},
		{"malformed", "PUT", "/v1/kv/k", `{"value":`, json, 400, "invalid_json"},
		{"not an object", "PUT", "/v1/kv/k", `[1,2]`, json, 400, "invalid_json"},
		{"two values", "PUT", "/v1/kv/k", `{"value":"x"}{"value":"y"}`, json, 400, "invalid_json"},
		{"empty body", "PUT", "/v1/kv/k", ``, json, 400, "invalid_json"},
		{"form content type", "PUT", "/v1/kv/k", `{"value":"x"}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"body too large", "PUT", "/v1/kv/k", `{"value":"` + strings.Repeat("x", 100) + `"}`, json, 413, "body_too_large"},
		{"no such route", "GET", "/v1/nothing", ``, nil, 404, "not_found"},
		{"wrong method", "DELETE", "/v1/echo", ``, nil, 405, "method_not_allowed"},
		{"panic", "GET", "/v1/panic", ``, nil, 500, "internal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, tc.method, base+tc.path, tc.body, tc.header...)
			if r.status != tc.status || r.errCode() != tc.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json", ct)
			}
		})
	}
	n, err := s.Client(t).Do(t.Context(), rueidis.Client.B(s.Client(t)).Dbsize().Build()).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("Redis holds %d keys (%v) after bad requests, want 0", n, err)
	}
	// A chunked body over the limit (no Content-Length) is cut off too.
	req, _ := http.NewRequestWithContext(t.Context(), "PUT", base+"/v1/kv/k", io.MultiReader(strings.NewReader(`{"value":"`), strings.NewReader(strings.Repeat("y", 200)+`"}`)))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked oversize body: got %d, want 413", resp.StatusCode)
	}
}

func TestRedisOutageIs503AndRecovers(t *testing.T) {
	s := redisstoretest.NewReal(t)
	th := startHost(t, s.URL(), nil, kvFactory(nil))
	base := "http://" + th.api
	if r := do(t, "PUT", base+"/v1/kv/k", `{"value":"before"}`); r.status != 200 {
		t.Fatalf("PUT before outage: got %d %s", r.status, r.body)
	}

	s.Kill()
	r := do(t, "PUT", base+"/v1/kv/k", `{"value":"during"}`)
	if r.status != 503 || r.errCode() != "redis_unavailable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("PUT during outage: got %d %s (Retry-After %q), want 503 redis_unavailable with Retry-After", r.status, r.body, r.header.Get("Retry-After"))
	}
	if r := do(t, "GET", "http://"+th.ops+"/readyz", ""); r.status != 503 || !strings.Contains(r.body, "redis") {
		t.Fatalf("readyz during outage: got %d %s, want 503 naming redis", r.status, r.body)
	}
	if r := do(t, "GET", "http://"+th.ops+"/healthz", ""); r.status != 200 {
		t.Fatalf("healthz during outage: got %d, want 200", r.status)
	}
	if m := do(t, "GET", "http://"+th.ops+"/metrics", "").body; !strings.Contains(m, "sidecar_redis_up 0\n") {
		t.Fatal("sidecar_redis_up is not 0 during the outage")
	}

	// Once /readyz is ready again, no request fails: the connection renewed
	// its client, so no pooled connection that died with the old Redis
	// process is left to fail a call.
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "readyz after Redis returned", func() bool {
		return do(t, "GET", "http://"+th.ops+"/readyz", "").status == 200
	})
	for i := range 20 {
		if r := do(t, "PUT", base+"/v1/kv/k", fmt.Sprintf(`{"value":"after%d"}`, i)); r.status != 200 {
			t.Fatalf("PUT %d after recovery: got %d %s", i, r.status, r.body)
		}
	}
	if r := do(t, "GET", base+"/v1/kv/k", ""); r.status != 200 || !strings.Contains(r.body, "after19") {
		t.Fatalf("GET after recovery: got %d %s", r.status, r.body)
	}
	if m := do(t, "GET", "http://"+th.ops+"/metrics", "").body; !strings.Contains(m, "sidecar_redis_up 1\n") {
		t.Fatal("sidecar_redis_up is not 1 after recovery")
	}
}

func TestStartsBeforeRedisAndBecomesReady(t *testing.T) {
	port, err := redisstoretest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("redis://127.0.0.1:%d", port)
	th := startHostEarly(t, url, nil, kvFactory(nil))
	if r := do(t, "GET", "http://"+th.ops+"/healthz", ""); r.status != 200 {
		t.Fatalf("healthz before Redis: got %d, want 200", r.status)
	}
	if r := do(t, "GET", "http://"+th.ops+"/readyz", ""); r.status != 503 {
		t.Fatalf("readyz before Redis: got %d %s, want 503", r.status, r.body)
	}
	r := do(t, "GET", "http://"+th.api+"/v1/kv/k", "")
	if r.status != 503 || r.errCode() != "redis_unavailable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("API before Redis: got %d %s, want 503 redis_unavailable with Retry-After", r.status, r.body)
	}

	redisstoretest.NewRealOnPort(t, port)
	eventually(t, 15*time.Second, "readyz after Redis started", func() bool {
		return do(t, "GET", "http://"+th.ops+"/readyz", "").status == 200
	})
	if r := do(t, "PUT", "http://"+th.api+"/v1/kv/k", `{"value":"v"}`); r.status != 200 {
		t.Fatalf("PUT once ready: got %d %s", r.status, r.body)
	}
}

func TestStartupTimeoutEndsRun(t *testing.T) {
	port, err := redisstoretest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	th := startHostEarly(t, fmt.Sprintf("redis://127.0.0.1:%d", port), envconf.Env{"SIDECAR_STARTUP_TIMEOUT": "300ms"}, kvFactory(nil))
	select {
	case err := <-th.done:
		th.done <- err
		if err == nil || !strings.Contains(err.Error(), "SIDECAR_STARTUP_TIMEOUT") {
			t.Fatalf("got %v, want an error naming SIDECAR_STARTUP_TIMEOUT", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not give up after SIDECAR_STARTUP_TIMEOUT")
	}
}

func TestShutdownFinishesInFlightRequests(t *testing.T) {
	var closed atomic.Int32
	th := startHost(t, redisstoretest.New(t).URL(), nil, kvFactory(&closed))
	got := make(chan reply, 1)
	go func() { got <- do(t, "GET", "http://"+th.api+"/v1/slow", "") }()
	time.Sleep(100 * time.Millisecond) // let the request reach the handler
	if err := th.stop(); err != nil {
		t.Fatalf("Run returned %v after shutdown, want nil", err)
	}
	if r := <-got; r.status != 200 {
		t.Fatalf("in-flight request: got %d %s, want 200", r.status, r.body)
	}
	if closed.Load() != 1 {
		t.Fatalf("module closed %d times, want 1", closed.Load())
	}
}

func TestHTTPMetricsUseRoutePatterns(t *testing.T) {
	th := startHost(t, redisstoretest.New(t).URL(), nil, kvFactory(nil))
	do(t, "PUT", "http://"+th.api+"/v1/kv/user-42", `{"value":"v"}`)
	do(t, "GET", "http://"+th.api+"/v1/nothing", "")
	m := do(t, "GET", "http://"+th.ops+"/metrics", "").body
	for _, want := range []string{
		`sidecar_http_requests_total{code="200",route="PUT /v1/kv/{key}"} 1`,
		`sidecar_http_requests_total{code="404",route="unmatched"} 1`,
		`sidecar_http_request_duration_seconds_count{route="GET /v1/kv/{key}"} 0`,
		`sidecar_build_info{`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(m, "user-42") {
		t.Error("metrics carry a raw id from the path")
	}
}
