package sidecar_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
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
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
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
		{Pattern: "GET /v1/kv/{key}", Handler: m.get, Query: []string{"fresh", "tag.*"}},
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

// do sends one request to a full URL.
var do = sidecartest.Do

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
		th := sidecartest.Start(t, s, nil, kvFactory(nil))
		base := th.API
		if r := do(t, "PUT", base+"/v1/kv/k1", `{"value":"v1"}`, "Content-Type", "application/json"); r.Status != 200 {
			t.Fatalf("PUT: got %d %s, want 200", r.Status, r.Body)
		}
		got, err := s.Client(t).Do(t.Context(), rueidis.Client.B(s.Client(t)).Get().Key("kv:k1").Build()).ToString()
		if err != nil || got != "v1" {
			t.Fatalf("Redis holds %q (%v), want v1", got, err)
		}
		if r := do(t, "GET", base+"/v1/kv/k1", ""); r.Status != 200 || !strings.Contains(r.Body, `"v1"`) {
			t.Fatalf("GET: got %d %s", r.Status, r.Body)
		}
		if r := do(t, "GET", base+"/v1/kv/nope", ""); r.Status != 404 || r.Code() != "not_found" {
			t.Fatalf("GET missing: got %d %s, want 404 not_found", r.Status, r.Body)
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
			th := sidecartest.Start(t, s, envconf.Env{"SIDECAR_MODULES": tc.modules}, kvFactory(nil), echoFactory)
			base := th.API
			// A kv key that does not exist is the module's 404 ("no key")
			// when kv is enabled and the mux's "no such route" otherwise.
			kv := do(t, "GET", base+"/v1/kv/absent", "")
			if got := strings.Contains(kv.Body, "no key"); got != tc.wantKV {
				t.Errorf("kv enabled = %v, want %v (%d %s)", got, tc.wantKV, kv.Status, kv.Body)
			}
			echo := do(t, "POST", base+"/v1/echo", `{"a":1}`)
			if got := echo.Status == 200; got != tc.wantEcho {
				t.Errorf("echo enabled = %v, want %v (%d %s)", got, tc.wantEcho, echo.Status, echo.Body)
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
	th := sidecartest.Start(t, redisstoretest.New(t), envconf.Env{"SIDECAR_API_TOKEN": "s3cret-token"}, kvFactory(nil))
	base := th.API
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
		{"scheme in lower case", []string{"Authorization", "bearer s3cret-token"}, 404},
		{"scheme in upper case", []string{"Authorization", "BEARER s3cret-token"}, 404},
		{"no token after the scheme", []string{"Authorization", "Bearer"}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "GET", base+"/v1/kv/absent", "", tc.header...)
			if r.Status != tc.want {
				t.Fatalf("got %d %s, want %d", r.Status, r.Body, tc.want)
			}
			if tc.want == 401 && (r.Code() != "unauthorized" || r.Header.Get("WWW-Authenticate") == "") {
				t.Fatalf("got %s / WWW-Authenticate %q, want the unauthorized envelope and challenge", r.Body, r.Header.Get("WWW-Authenticate"))
			}
		})
	}
	// Unknown routes do not leak their existence to unauthenticated callers.
	if r := do(t, "GET", base+"/v1/nothing-here", ""); r.Status != 401 {
		t.Fatalf("unknown route without token: got %d, want 401", r.Status)
	}
	// Probes and metrics stay open for the kubelet and Prometheus.
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := do(t, "GET", th.Ops+p, ""); r.Status != 200 {
			t.Fatalf("%s: got %d, want 200 without a token", p, r.Status)
		}
	}
}

func TestBadRequestsGetTheEnvelopeAndWriteNothing(t *testing.T) {
	s := redisstoretest.New(t)
	th := sidecartest.Start(t, s, envconf.Env{"SIDECAR_MAX_BODY_BYTES": "64"}, kvFactory(nil), echoFactory)
	base := th.API
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
			if r.Status != tc.status || r.Code() != tc.code {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
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
	th := sidecartest.Start(t, s, nil, kvFactory(nil))
	base := th.API
	if r := do(t, "PUT", base+"/v1/kv/k", `{"value":"before"}`); r.Status != 200 {
		t.Fatalf("PUT before outage: got %d %s", r.Status, r.Body)
	}

	s.Kill()
	r := do(t, "PUT", base+"/v1/kv/k", `{"value":"during"}`)
	if r.Status != 503 || r.Code() != "redis_unavailable" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("PUT during outage: got %d %s (Retry-After %q), want 503 redis_unavailable with Retry-After", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if r := do(t, "GET", th.Ops+"/readyz", ""); r.Status != 503 || r.Code() != "not_ready" || !strings.Contains(r.Body, "Redis") || strings.Contains(r.Body, "127.0.0.1") {
		t.Fatalf("readyz during outage: got %d %s, want 503 not_ready naming Redis, without its address", r.Status, r.Body)
	}
	if r := do(t, "GET", th.Ops+"/healthz", ""); r.Status != 200 {
		t.Fatalf("healthz during outage: got %d, want 200", r.Status)
	}
	if m := do(t, "GET", th.Ops+"/metrics", "").Body; !strings.Contains(m, "sidecar_redis_up 0\n") {
		t.Fatal("sidecar_redis_up is not 0 during the outage")
	}

	// Once /readyz is ready again, no request fails: the connection renewed
	// its client, so no pooled connection that died with the old Redis
	// process is left to fail a call.
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "readyz after Redis returned", func() bool {
		return do(t, "GET", th.Ops+"/readyz", "").Status == 200
	})
	for i := range 20 {
		if r := do(t, "PUT", base+"/v1/kv/k", fmt.Sprintf(`{"value":"after%d"}`, i)); r.Status != 200 {
			t.Fatalf("PUT %d after recovery: got %d %s", i, r.Status, r.Body)
		}
	}
	if r := do(t, "GET", base+"/v1/kv/k", ""); r.Status != 200 || !strings.Contains(r.Body, "after19") {
		t.Fatalf("GET after recovery: got %d %s", r.Status, r.Body)
	}
	if m := do(t, "GET", th.Ops+"/metrics", "").Body; !strings.Contains(m, "sidecar_redis_up 1\n") {
		t.Fatal("sidecar_redis_up is not 1 after recovery")
	}
}

func TestStartsBeforeRedisAndBecomesReady(t *testing.T) {
	port, err := redisstoretest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("redis://127.0.0.1:%d", port)
	th := sidecartest.StartURL(t, url, nil, kvFactory(nil))
	if r := do(t, "GET", th.Ops+"/healthz", ""); r.Status != 200 {
		t.Fatalf("healthz before Redis: got %d, want 200", r.Status)
	}
	if r := do(t, "GET", th.Ops+"/readyz", ""); r.Status != 503 {
		t.Fatalf("readyz before Redis: got %d %s, want 503", r.Status, r.Body)
	}
	r := do(t, "GET", th.API+"/v1/kv/k", "")
	if r.Status != 503 || r.Code() != "redis_unavailable" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("API before Redis: got %d %s, want 503 redis_unavailable with Retry-After", r.Status, r.Body)
	}

	redisstoretest.NewRealOnPort(t, port)
	eventually(t, 15*time.Second, "readyz after Redis started", func() bool {
		return do(t, "GET", th.Ops+"/readyz", "").Status == 200
	})
	if r := do(t, "PUT", th.API+"/v1/kv/k", `{"value":"v"}`); r.Status != 200 {
		t.Fatalf("PUT once ready: got %d %s", r.Status, r.Body)
	}
}

func TestStartupTimeoutEndsRun(t *testing.T) {
	port, err := redisstoretest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	th := sidecartest.StartURL(t, fmt.Sprintf("redis://127.0.0.1:%d", port), envconf.Env{"SIDECAR_STARTUP_TIMEOUT": "300ms"}, kvFactory(nil))
	err, exited := th.Exited(10 * time.Second)
	if !exited {
		t.Fatal("Run did not give up after SIDECAR_STARTUP_TIMEOUT")
	}
	if err == nil || !strings.Contains(err.Error(), "SIDECAR_STARTUP_TIMEOUT") {
		t.Fatalf("got %v, want an error naming SIDECAR_STARTUP_TIMEOUT", err)
	}
}

func TestShutdownFinishesInFlightRequests(t *testing.T) {
	var closed atomic.Int32
	th := sidecartest.Start(t, redisstoretest.New(t), nil, kvFactory(&closed))
	got := make(chan sidecartest.Reply, 1)
	go func() { got <- do(t, "GET", th.API+"/v1/slow", "") }()
	time.Sleep(100 * time.Millisecond) // let the request reach the handler
	if err := th.Stop(); err != nil {
		t.Fatalf("Run returned %v after shutdown, want nil", err)
	}
	if r := <-got; r.Status != 200 {
		t.Fatalf("in-flight request: got %d %s, want 200", r.Status, r.Body)
	}
	if closed.Load() != 1 {
		t.Fatalf("module closed %d times, want 1", closed.Load())
	}
}

func TestHTTPMetricsUseRoutePatterns(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), nil, kvFactory(nil))
	do(t, "PUT", th.API+"/v1/kv/user-42", `{"value":"v"}`)
	do(t, "GET", th.API+"/v1/nothing", "")
	m := do(t, "GET", th.Ops+"/metrics", "").Body
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

// A query parameter the route does not take is 400 unknown_parameter
// listing those it takes, before the handler runs; a prefix entry
// ("tag.*") takes every parameter under it.
func TestUnknownQueryParameters(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), nil, kvFactory(nil))
	for _, tc := range []struct {
		method, path string
		status       int
		code, names  string
	}{
		{"GET", "/v1/kv/a?fresh=1&tag.x=2", 404, "not_found", ""},
		{"GET", "/v1/kv/a?frsh=1", 400, "unknown_parameter", `"frsh"; accepted: fresh, tag.*`},
		{"GET", "/v1/kv/a?Fresh=1", 400, "unknown_parameter", `"Fresh"`},
		{"GET", "/v1/kv/a?tag.=1", 400, "unknown_parameter", `"tag."`},
		{"PUT", "/v1/kv/a?fresh=1", 400, "unknown_parameter", `"fresh": this route takes none`},
		{"GET", "/v1/kv/a?fresh=%zz", 400, "invalid_query", ""},
	} {
		r := th.Do(t, tc.method, tc.path, `{"value":"v"}`)
		var env struct{ Error struct{ Message string } }
		_ = json.Unmarshal([]byte(r.Body), &env)
		if r.Status != tc.status || r.Code() != tc.code || !strings.Contains(env.Error.Message, tc.names) {
			t.Errorf("%s %s: %s, want %d %s naming %s", tc.method, tc.path, r, tc.status, tc.code, tc.names)
		}
	}
}

// A port already taken ends the start with an error naming the setting,
// and the modules built are closed first: their goroutines stop before the
// process closes Redis, so none logs its subscription "lost" on the way out.
func TestBusyPortClosesTheModules(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, setting := range []string{"SIDECAR_LISTEN_ADDR", "SIDECAR_OPS_ADDR"} {
		var closed atomic.Int32
		env := envconf.Env{"REDIS_URL": redisstoretest.New(t).URL(), "SIDECAR_LISTEN_ADDR": "127.0.0.1:0", "SIDECAR_OPS_ADDR": "127.0.0.1:0"}
		env[setting] = busy.Addr().String()
		err := sidecar.Run(t.Context(), env, io.Discard, []sidecar.Factory{kvFactory(&closed)})
		if err == nil || !strings.HasPrefix(err.Error(), setting+": ") {
			t.Errorf("%s busy: got %v, want an error naming it", setting, err)
		}
		if closed.Load() != 1 {
			t.Errorf("%s busy: kv module closed %d times, want 1", setting, closed.Load())
		}
	}
}
