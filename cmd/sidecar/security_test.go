package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// productRoutes lists the ServeMux pattern of every route the product's
// modules register.
func productRoutes(t *testing.T, srv *redisstoretest.Server) []string {
	t.Helper()
	conn, err := redisstore.Open(srv.Options(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	var out []string
	for _, f := range modules.All() {
		m, err := f.New(context.Background(), sidecar.Deps{Redis: conn, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Env: envconf.Env{}, Registerer: nil, Limits: defaultLimits(t)})
		if err != nil {
			t.Fatalf("module %s: %v", f.Name, err)
		}
		for _, r := range m.Routes() {
			out = append(out, r.Pattern)
		}
		if c, ok := m.(sidecar.Closer); ok {
			_ = c.Close(context.Background())
		}
	}
	return out
}

// With SIDECAR_API_TOKEN set, every /v1 route of every module refuses a
// call without the token, and with a wrong one, before doing anything.
func TestEveryRouteNeedsTheToken(t *testing.T) {
	srv := redisstoretest.New(t)
	h := sidecartest.Start(t, srv, envconf.Env{"SIDECAR_API_TOKEN": "t0ken-for-tests"}, modules.All()...)
	routes := productRoutes(t, srv)
	if len(routes) < 25 {
		t.Fatalf("only %d routes found", len(routes))
	}
	for _, pattern := range routes {
		method, path, _ := strings.Cut(pattern, " ")
		for _, name := range []string{"user_id", "session_id", "qa_id", "id", "name"} {
			path = strings.ReplaceAll(path, "{"+name+"}", "x1")
		}
		for _, header := range [][]string{nil, {"Authorization", "Bearer t0ken-for-test"}, {"Authorization", "t0ken-for-tests"}} {
			r := h.Do(t, method, path, `{}`, header...)
			if r.Status != 401 || r.Code() != "unauthorized" {
				t.Errorf("%s with %v: %d %s, want 401 unauthorized", pattern, header, r.Status, r.Body)
			}
		}
	}
	c := srv.Client(t)
	if n, _ := c.Do(t.Context(), c.B().Dbsize().Build()).AsInt64(); n != 0 {
		t.Fatalf("unauthenticated calls wrote %d keys", n)
	}
}

// Oversized headers are refused by the server (431), bounded by
// MaxHeaderBytes, before any handler runs.
func TestHeaderSizeLimit(t *testing.T) {
	h := sidecartest.Start(t, redisstoretest.New(t), nil, modules.All()...)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", h.API+"/v1/users/u/sessions/s/entries", nil)
	req.Header.Set("X-Padding", strings.Repeat("a", 200<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("200 KiB of headers: %d, want 431", resp.StatusCode)
	}
}

// Neither the Redis password nor the API token reaches the log or an error
// answer, whatever happens: bad tokens, Redis going away, a bad request.
func TestNoSecretInLogsOrAnswers(t *testing.T) {
	const password, token = "s3cret-redis-pa55", "api-t0ken-s3cret"
	srv := redisstoretest.NewReal(t, "--requirepass", password)
	p := start(t,
		fmt.Sprintf("REDIS_URL=redis://:%s@%s/0", password, srv.Addr),
		"SIDECAR_API_TOKEN="+token, "LOG_LEVEL=debug")
	waitStatus(t, "http://"+p.ops+"/readyz", 200, 15*time.Second)
	var answers []string
	call := func(method, path, body string, header ...string) {
		req, _ := http.NewRequest(method, "http://"+p.api+path, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answers = append(answers, string(b))
	}
	auth := []string{"Authorization", "Bearer " + token}
	call("POST", "/v1/users/u/sessions/s/entries", `{"question":"q","answer":"a"}`, auth...)
	call("POST", "/v1/users/u/sessions/s/entries", `{"question":"q"}`, "Authorization", "Bearer "+token+"x")
	call("POST", "/v1/users/u/sessions/s/entries", `{"question":`, auth...)
	srv.Kill()
	call("POST", "/v1/users/u/sessions/s/entries", `{"question":"q","answer":"a"}`, auth...)
	call("GET", "/v1/locks/l", ``, auth...)
	time.Sleep(1200 * time.Millisecond) // health checks log the outage
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, "http://"+p.ops+"/readyz", 200, 15*time.Second)
	readyz, _ := http.Get("http://" + p.ops + "/readyz")
	b, _ := io.ReadAll(readyz.Body)
	readyz.Body.Close()
	answers = append(answers, string(b))
	logs := p.log()
	for _, secret := range []string{password, token} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds a secret:\n%s", logs)
		}
		for _, a := range answers {
			if strings.Contains(a, secret) {
				t.Errorf("an answer holds a secret: %s", a)
			}
		}
	}
	if !strings.Contains(logs, "redis") {
		t.Fatalf("the log says nothing about Redis:\n%s", logs)
	}
}
