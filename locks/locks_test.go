package locks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

type reply struct {
	status int
	body   string
}

func (r reply) code() string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(r.body), &env)
	return env.Error.Code
}

type grant struct {
	Token        string `json:"token"`
	FencingToken int64  `json:"fencing_token"`
	Owner        string `json:"owner"`
	ExpiresAt    string `json:"expires_at"`
	TTLMs        int64  `json:"ttl_ms"`
}

type state struct {
	Held         bool   `json:"held"`
	Owner        string `json:"owner"`
	TTLMs        *int64 `json:"ttl_ms"`
	FencingToken int64  `json:"fencing_token"`
}

func do(t testing.TB, ctx context.Context, method, url, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{status: -1, body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: string(b)}
}

func decode[T any](t testing.TB, r reply) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
	return v
}

func acquire(t testing.TB, base, name, body string) grant {
	t.Helper()
	r := do(t, t.Context(), "POST", base+"/v1/locks/"+name, body)
	if r.status != 200 {
		t.Fatalf("acquire %s: got %d %s, want 200", name, r.status, r.body)
	}
	return decode[grant](t, r)
}

func inspect(t testing.TB, base, name string) state {
	t.Helper()
	r := do(t, t.Context(), "GET", base+"/v1/locks/"+name, "")
	if r.status != 200 {
		t.Fatalf("inspect %s: got %d %s", name, r.status, r.body)
	}
	return decode[state](t, r)
}

func get(t testing.TB, c rueidis.Client, key string) (string, error) {
	t.Helper()
	return c.Do(t.Context(), c.B().Get().Key(key).Build()).ToString()
}

func pttl(t testing.TB, c rueidis.Client, key string) int64 {
	t.Helper()
	n, err := c.Do(t.Context(), c.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func tokenBody(token string) string { return `{"token":"` + token + `"}` }

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestLockLifecycle(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h := sidecartest.Start(t, s, nil, locks.Factory)
		rc := s.Client(t)
		base := h.API

		g := acquire(t, base, "default_lock", `{"owner":"worker-1","ttl_ms":60000}`)
		if !hex32.MatchString(g.Token) || g.FencingToken < 1 || g.Owner != "worker-1" || g.TTLMs != 60000 {
			t.Fatalf("grant %+v, want a 32-hex token, a fencing token, owner worker-1, ttl 60000", g)
		}
		exp, err := time.Parse(time.RFC3339Nano, g.ExpiresAt)
		if err != nil || time.Until(exp) < 55*time.Second || time.Until(exp) > 65*time.Second {
			t.Fatalf("expires_at %q (%v), want about a minute from now", g.ExpiresAt, err)
		}
		// redis-py's layout: the key is the name and holds the token.
		if v, err := get(t, rc, "default_lock"); err != nil || v != g.Token {
			t.Fatalf("key default_lock holds %q (%v), want the token", v, err)
		}
		fence := strconv.FormatInt(g.FencingToken, 10)
		if v, err := get(t, rc, locks.KeysOf("default_lock").Fence); err != nil || v != fence {
			t.Fatalf("fence key %q (%v), want the token granted, %s", v, err, fence)
		}
		if st := inspect(t, base, "default_lock"); !st.Held || st.Owner != "worker-1" || st.FencingToken != g.FencingToken || st.TTLMs == nil || *st.TTLMs < 55000 {
			t.Fatalf("inspect %+v, want held by worker-1, fence %d, ttl about 60000", st, g.FencingToken)
		}

		r := do(t, t.Context(), "POST", base+"/v1/locks/default_lock", `{"owner":"worker-2"}`)
		if r.status != 409 || r.code() != "lock_held" || !strings.Contains(r.body, "worker-1") {
			t.Fatalf("second acquire: got %d %s, want 409 lock_held naming worker-1", r.status, r.body)
		}

		// A wrong token changes nothing: refresh 409 lock_lost, release 409 not_owner.
		before := pttl(t, rc, "default_lock")
		wrong := strings.Repeat("0", 32)
		if r := do(t, t.Context(), "POST", base+"/v1/locks/default_lock/refresh", `{"token":"`+wrong+`","ttl_ms":999999}`); r.status != 409 || r.code() != "lock_lost" {
			t.Fatalf("refresh with a wrong token: got %d %s, want 409 lock_lost", r.status, r.body)
		}
		if r := do(t, t.Context(), "DELETE", base+"/v1/locks/default_lock", tokenBody(wrong)); r.status != 409 || r.code() != "not_owner" {
			t.Fatalf("release with a wrong token: got %d %s, want 409 not_owner", r.status, r.body)
		}
		if v, _ := get(t, rc, "default_lock"); v != g.Token {
			t.Fatalf("after wrong-token calls the key holds %q, want the holder's token", v)
		}
		if after := pttl(t, rc, "default_lock"); after > before || after < before-5000 {
			t.Fatalf("PTTL went from %d to %d after a wrong-token refresh, want it untouched", before, after)
		}

		// The right token refreshes: to a new ttl, then back to the acquired one.
		r = do(t, t.Context(), "POST", base+"/v1/locks/default_lock/refresh", `{"token":"`+g.Token+`","ttl_ms":120000}`)
		if r.status != 200 {
			t.Fatalf("refresh: got %d %s", r.status, r.body)
		}
		if rg := decode[grant](t, r); rg.TTLMs != 120000 || rg.FencingToken != g.FencingToken || rg.Owner != "worker-1" || rg.Token != g.Token {
			t.Fatalf("refresh answer %+v, want ttl 120000, fence %d, owner worker-1, same token", rg, g.FencingToken)
		}
		if n := pttl(t, rc, "default_lock"); n < 110000 {
			t.Fatalf("PTTL after refresh %d, want about 120000", n)
		}
		if n := pttl(t, rc, locks.KeysOf("default_lock").Meta); n < 110000 {
			t.Fatalf("meta PTTL after refresh %d, want about 120000", n)
		}
		r = do(t, t.Context(), "POST", base+"/v1/locks/default_lock/refresh", tokenBody(g.Token))
		if rg := decode[grant](t, r); r.status != 200 || rg.TTLMs != 60000 {
			t.Fatalf("refresh without ttl_ms: got %d %s, want 200 with the acquired ttl 60000", r.status, r.body)
		}

		if r := do(t, t.Context(), "DELETE", base+"/v1/locks/default_lock", tokenBody(g.Token)); r.status != 200 || !strings.Contains(r.body, `"released":true`) {
			t.Fatalf("release: got %d %s, want 200 released", r.status, r.body)
		}
		if r := do(t, t.Context(), "DELETE", base+"/v1/locks/default_lock", tokenBody(g.Token)); r.status != 404 || r.code() != "not_held" {
			t.Fatalf("second release: got %d %s, want 404 not_held", r.status, r.body)
		}
		if r := do(t, t.Context(), "POST", base+"/v1/locks/default_lock/refresh", tokenBody(g.Token)); r.status != 409 || r.code() != "lock_lost" {
			t.Fatalf("refresh after release: got %d %s, want 409 lock_lost", r.status, r.body)
		}
		if st := inspect(t, base, "default_lock"); st.Held || st.TTLMs != nil || st.Owner != "" {
			t.Fatalf("inspect after release %+v, want only held=false", st)
		}
		n, err := rc.Do(t.Context(), rc.B().Exists().Key("default_lock", locks.KeysOf("default_lock").Meta).Build()).AsInt64()
		if err != nil || n != 0 {
			t.Fatalf("%d lock keys left after release (%v), want 0 (only the fence key stays, for locks.FenceTTL)", n, err)
		}

		// No body at all is {}: AGENTIC_LOCK_EXPIRE and no wait.
		g2 := acquire(t, base, "default_lock", "")
		if g2.FencingToken <= g.FencingToken || g2.TTLMs != 240000 || g2.Token == g.Token {
			t.Fatalf("re-acquire %+v, want a fence above %d, the default ttl 240000 and a new token", g2, g.FencingToken)
		}
	})
}

// TestNameCollidingWithAnotherKey: a lock name that is already some other
// key (the lock key is the bare name, as in redis-py) reads as held and is
// never overwritten or deleted.
func TestNameCollidingWithAnotherKey(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h := sidecartest.Start(t, s, nil, locks.Factory)
		rc := s.Client(t)
		if err := rc.Do(t.Context(), rc.B().Hset().Key("config").FieldValue().FieldValue("a", "1").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		tok := tokenBody(strings.Repeat("1", 32))
		for _, c := range []struct {
			method, path, body string
			status             int
			code               string
		}{
			{"POST", "/v1/locks/config", `{}`, 409, "lock_held"},
			{"POST", "/v1/locks/config/refresh", tok, 409, "lock_lost"},
			{"DELETE", "/v1/locks/config", tok, 409, "not_owner"},
		} {
			if r := do(t, t.Context(), c.method, h.API+c.path, c.body); r.status != c.status || r.code() != c.code {
				t.Fatalf("%s %s: got %d %s, want %d %s", c.method, c.path, r.status, r.body, c.status, c.code)
			}
		}
		if st := inspect(t, h.API, "config"); !st.Held || *st.TTLMs != -1 {
			t.Fatalf("inspect %+v, want held with ttl_ms -1", st)
		}
		if v, err := rc.Do(t.Context(), rc.B().Hget().Key("config").Field("a").Build()).ToString(); err != nil || v != "1" {
			t.Fatalf("the colliding hash changed: %q %v", v, err)
		}
	})
}

func TestExpiryComesFromRedisClock(t *testing.T) {
	// The embedded Redis lets us set its TIME far from the pod's clock: the
	// grant's expires_at follows Redis, and the lock lives its full ttl.
	s := redisstoretest.NewMini(t)
	h := sidecartest.Start(t, s, nil, locks.Factory)
	redisNow := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	s.Mini.SetTime(redisNow)
	g := acquire(t, h.API, "skew", `{"ttl_ms":5000}`)
	if want := redisNow.Add(5 * time.Second).Format("2006-01-02T15:04:05.000Z07:00"); g.ExpiresAt != want {
		t.Fatalf("expires_at %s, want %s (Redis TIME + ttl, not the pod clock)", g.ExpiresAt, want)
	}
	if st := inspect(t, h.API, "skew"); !st.Held || *st.TTLMs < 4000 {
		t.Fatalf("inspect %+v, want held with about 5 s left", st)
	}
}

func TestHolderThatNeverReleasesFreesAtTTL(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h := sidecartest.Start(t, s, nil, locks.Factory)
		first := acquire(t, h.API, "crashy", `{"ttl_ms":300}`)
		start := time.Now()
		g := acquire(t, h.API, "crashy", `{"wait_ms":5000}`)
		if waited := time.Since(start); waited < 200*time.Millisecond || g.FencingToken <= first.FencingToken {
			t.Fatalf("second holder got the lock after %s with fence %d, want after the first TTL with a fence above %d", waited, g.FencingToken, first.FencingToken)
		}
	})
}

func TestBadRequestsWriteNothing(t *testing.T) {
	s := redisstoretest.New(t)
	h := sidecartest.Start(t, s, envconf.Env{"AGENTIC_LOCK_TIMEOUT": "10"}, locks.Factory)
	tok := tokenBody(strings.Repeat("a", 32))
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"ttl zero", "POST", "/v1/locks/l", `{"ttl_ms":0}`, 400, "invalid_field"},
		{"ttl negative", "POST", "/v1/locks/l", `{"ttl_ms":-5}`, 400, "invalid_field"},
		{"ttl absurd", "POST", "/v1/locks/l", `{"ttl_ms":86400001}`, 400, "invalid_field"},
		{"ttl as string", "POST", "/v1/locks/l", `{"ttl_ms":"5000"}`, 400, "invalid_field"},
		{"ttl fractional", "POST", "/v1/locks/l", `{"ttl_ms":1.5}`, 400, "invalid_field"},
		{"wait negative", "POST", "/v1/locks/l", `{"wait_ms":-1}`, 400, "invalid_field"},
		{"wait over AGENTIC_LOCK_TIMEOUT", "POST", "/v1/locks/l", `{"wait_ms":10001}`, 400, "invalid_field"},
		{"unknown field", "POST", "/v1/locks/l", `{"timeout":5}`, 400, "unknown_field"},
		{"owner with control character", "POST", "/v1/locks/l", `{"owner":"a\u0007b"}`, 400, "invalid_field"},
		{"owner too long", "POST", "/v1/locks/l", `{"owner":"` + strings.Repeat("o", 257) + `"}`, 400, "invalid_field"},
		{"name with colon", "POST", "/v1/locks/a:b", `{}`, 400, "invalid_id"},
		{"name with braces", "POST", "/v1/locks/%7Ba%7D", `{}`, 400, "invalid_id"},
		{"name too long", "POST", "/v1/locks/" + strings.Repeat("n", 129), `{}`, 400, "invalid_id"},
		{"not JSON", "POST", "/v1/locks/l", `ttl=5`, 400, "invalid_json"},
		{"refresh without token", "POST", "/v1/locks/l/refresh", `{}`, 400, "invalid_field"},
		{"refresh ttl zero", "POST", "/v1/locks/l/refresh", `{"token":"x","ttl_ms":0}`, 400, "invalid_field"},
		{"refresh without body", "POST", "/v1/locks/l/refresh", ``, 400, "invalid_json"},
		{"release without token", "DELETE", "/v1/locks/l", `{"token":""}`, 400, "invalid_field"},
		{"release without body", "DELETE", "/v1/locks/l", ``, 400, "invalid_json"},
		{"release token wrong type", "DELETE", "/v1/locks/l", `{"token":5}`, 400, "invalid_field"},
		{"release unknown field", "DELETE", "/v1/locks/l", `{"token":"x","force":true}`, 400, "unknown_field"},
		{"inspect bad name", "GET", "/v1/locks/a%20b", ``, 400, "invalid_id"},
		{"release of a free lock", "DELETE", "/v1/locks/l", tok, 404, "not_held"},
		{"refresh of a free lock", "POST", "/v1/locks/l/refresh", tok, 409, "lock_lost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, t.Context(), tc.method, h.API+tc.path, tc.body)
			if r.status != tc.status || r.code() != tc.code {
				t.Fatalf("got %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	rc := s.Client(t)
	if n, err := rc.Do(t.Context(), rc.B().Dbsize().Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("Redis holds %d keys (%v) after bad requests, want 0", n, err)
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		env     envconf.Env
		wantErr string
	}{
		{envconf.Env{}, ""},
		{envconf.Env{"AGENTIC_LOCK_EXPIRE": "30", "AGENTIC_LOCK_TIMEOUT": "5"}, ""},
		{envconf.Env{"AGENTIC_LOCK_EXPIRE": "0"}, "AGENTIC_LOCK_EXPIRE: "},
		{envconf.Env{"AGENTIC_LOCK_EXPIRE": "-3"}, "AGENTIC_LOCK_EXPIRE: "},
		{envconf.Env{"AGENTIC_LOCK_EXPIRE": "abc"}, "AGENTIC_LOCK_EXPIRE: "},
		{envconf.Env{"AGENTIC_LOCK_EXPIRE": "86401"}, "AGENTIC_LOCK_EXPIRE: "},
		{envconf.Env{"AGENTIC_LOCK_TIMEOUT": "0"}, "AGENTIC_LOCK_TIMEOUT: "},
		{envconf.Env{"AGENTIC_LOCK_TIMEOUT": "1.5"}, "AGENTIC_LOCK_TIMEOUT: "},
	}
	for _, tc := range tests {
		t.Run(strings.TrimSpace(strings.ReplaceAll(strings.Trim(strconv.Quote(envString(tc.env)), `"`), " ", ",")), func(t *testing.T) {
			m, err := locks.New(t.Context(), sidecar.Deps{Env: tc.env, Redis: closedConn(t)})
			if m != nil {
				t.Cleanup(func() { _ = m.(sidecar.Closer).Close(context.Background()) })
			}
			var confErr *envconf.Error
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.wantErr != "" && (!errors.As(err, &confErr) || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an *envconf.Error starting %q", err, tc.wantErr)
			}
		})
	}
}

func envString(e envconf.Env) string {
	var parts []string
	for k, v := range e {
		parts = append(parts, k+"="+v)
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, " ")
}

func TestMetricsExistFromStartWithoutNamesOrTokens(t *testing.T) {
	s := redisstoretest.New(t)
	h := sidecartest.Start(t, s, nil, locks.Factory)
	m := h.Metrics(t)
	for _, want := range []string{
		`sidecar_lock_acquires_total{outcome="acquired"} 0`,
		`sidecar_lock_acquires_total{outcome="conflict"} 0`,
		`sidecar_lock_acquires_total{outcome="timeout"} 0`,
		`sidecar_lock_acquires_total{outcome="canceled"} 0`,
		`sidecar_lock_acquires_total{outcome="error"} 0`,
		`sidecar_lock_acquires_total{outcome="shutdown"} 0`,
		`sidecar_lock_wait_seconds_count{outcome="acquired"} 0`,
		`sidecar_lock_refresh_failures_total{reason="lost"} 0`,
		`sidecar_lock_refresh_failures_total{reason="error"} 0`,
		`sidecar_lock_releases_total{outcome="not_owner"} 0`,
		`sidecar_lock_waiter_wakeups_total{reason="released"} 0`,
		`sidecar_lock_waiters 0`,
		`sidecar_lock_held 0`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics at start lack %q", want)
		}
	}
	g := acquire(t, h.API, "secret-name", `{"owner":"secret-owner"}`)
	do(t, t.Context(), "POST", h.API+"/v1/locks/secret-name", `{}`)
	m = h.Metrics(t)
	for _, want := range []string{`sidecar_lock_held 1`, `sidecar_lock_acquires_total{outcome="conflict"} 1`} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, leak := range []string{"secret-name", "secret-owner", g.Token} {
		if strings.Contains(m, leak) {
			t.Errorf("metrics carry %q", leak)
		}
	}
	do(t, t.Context(), "DELETE", h.API+"/v1/locks/secret-name", tokenBody(g.Token))
	m = h.Metrics(t)
	if !strings.Contains(m, "sidecar_lock_held 0\n") {
		t.Errorf("sidecar_lock_held is not 0 after release")
	}
}

func TestConcurrentGoroutinesNeverShareALock(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h := sidecartest.Start(t, s, nil, locks.Factory)
		var (
			mu      sync.Mutex
			inside  int
			fences  []int64
			wg      sync.WaitGroup
			failure = make(chan string, 1)
		)
		for range 8 {
			wg.Go(func() {
				for range 10 {
					r := do(t, context.Background(), "POST", h.API+"/v1/locks/g", `{"wait_ms":20000,"ttl_ms":10000}`)
					if r.status != 200 {
						select {
						case failure <- r.body:
						default:
						}
						return
					}
					g := decode[grant](t, r)
					mu.Lock()
					inside++
					if inside != 1 {
						select {
						case failure <- "two holders at once":
						default:
						}
					}
					fences = append(fences, g.FencingToken)
					mu.Unlock()
					mu.Lock()
					inside--
					mu.Unlock()
					do(t, context.Background(), "DELETE", h.API+"/v1/locks/g", tokenBody(g.Token))
				}
			})
		}
		wg.Wait()
		select {
		case f := <-failure:
			t.Fatal(f)
		default:
		}
		if len(fences) != 80 {
			t.Fatalf("%d sections ran, want 80", len(fences))
		}
		for i := 1; i < len(fences); i++ {
			if fences[i] <= fences[i-1] {
				t.Fatalf("fence %d after %d: not strictly increasing in grant order", fences[i], fences[i-1])
			}
		}
	})
}

// TestSubscriptionSurvivesRedisRestart: after Redis comes back, releases
// wake waiters through Pub/Sub again (the subscription was re-made).
func TestSubscriptionSurvivesRedisRestart(t *testing.T) {
	s := redisstoretest.NewReal(t)
	h := sidecartest.Start(t, s, nil, locks.Factory)
	s.Kill()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	// Calls racing the reconnection may get 503 (fail fast, no hidden
	// retries); callers retry 503s, so this test does too.
	retry503 := func(ctx context.Context, method, url, body string) reply {
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := do(t, ctx, method, url, body)
			if r.status != 503 || time.Now().After(deadline) {
				return r
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	r := retry503(t.Context(), "POST", h.API+"/v1/locks/after", `{"ttl_ms":60000}`)
	if r.status != 200 {
		t.Fatalf("acquire after restart: %d %s", r.status, r.body)
	}
	g := decode[grant](t, r)
	// Each round: a waiter blocks, the holder releases, the waiter wins.
	// Once the subscription is back, a round is woken by Pub/Sub.
	deadline := time.Now().Add(15 * time.Second)
	for round := 0; ; round++ {
		got := make(chan reply, 1)
		go func() {
			got <- retry503(context.Background(), "POST", h.API+"/v1/locks/after", `{"ttl_ms":60000,"wait_ms":20000}`)
		}()
		waitMetric(t, h, `sidecar_lock_waiters 1`)
		if r := retry503(t.Context(), "DELETE", h.API+"/v1/locks/after", tokenBody(g.Token)); r.status != 200 {
			t.Fatalf("release: %d %s", r.status, r.body)
		}
		r := <-got
		if r.status != 200 {
			t.Fatalf("waiter: %d %s", r.status, r.body)
		}
		g = decode[grant](t, r)
		m := h.Metrics(t)
		if !strings.Contains(m, `sidecar_lock_waiter_wakeups_total{reason="released"} 0`+"\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Pub/Sub wake-up after %d rounds since Redis restarted", round+1)
		}
	}
}
