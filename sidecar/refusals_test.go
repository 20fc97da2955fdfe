package sidecar_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// Redis's refusals answer 503 with their own code, Retry-After and a
// sentence, are counted, and make /readyz say why while they last.
func TestRedisOutOfMemoryIs503RedisOOM(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	th := sidecartest.Start(t, srv, nil, kvFactory(nil))
	raw := srv.Client(t)
	ctx := t.Context()
	if r := do(t, "PUT", th.API+"/v1/kv/a", `{"value":"before"}`); r.Status != 200 {
		t.Fatalf("PUT before: %d %s", r.Status, r.Body)
	}
	for _, cmd := range [][]string{{"CONFIG", "SET", "maxmemory-policy", "noeviction"}, {"CONFIG", "SET", "maxmemory", "1"}} {
		if err := raw.Do(ctx, raw.B().Arbitrary(cmd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	r := do(t, "PUT", th.API+"/v1/kv/b", `{"value":"during"}`)
	if r.Status != 503 || r.Code() != "redis_oom" || r.Header.Get("Retry-After") == "" || !strings.Contains(r.Body, "out of memory") {
		t.Fatalf("PUT with Redis full: got %d %s (Retry-After %q), want 503 redis_oom", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if rd := do(t, "GET", th.Ops+"/readyz", ""); rd.Status != 503 || !strings.Contains(rd.Body, "out of memory") {
		t.Fatalf("readyz with Redis full: %d %s", rd.Status, rd.Body)
	}
	if m := do(t, "GET", th.Ops+"/metrics", ""); !strings.Contains(m.Body, `sidecar_redis_refusals_total{code="redis_oom"} 1`) ||
		!strings.Contains(m.Body, "sidecar_redis_up 1") {
		t.Fatalf("metrics: %s", grepLines(m.Body, "redis_"))
	}
	if err := raw.Do(ctx, raw.B().Arbitrary("CONFIG", "SET", "maxmemory", "0").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if r := do(t, "PUT", th.API+"/v1/kv/b", `{"value":"after"}`); r.Status != 200 {
		t.Fatalf("PUT after memory was freed: %d %s", r.Status, r.Body)
	}
	eventually(t, 15*time.Second, "readyz once Redis has memory again", func() bool {
		return do(t, "GET", th.Ops+"/readyz", "").Status == 200
	})
}

func TestRedisReplicaIs503RedisReadonly(t *testing.T) {
	primary := redisstoretest.NewReal(t)
	replica := redisstoretest.NewReal(t, "--replicaof", "127.0.0.1", strings.TrimPrefix(primary.Addr, "127.0.0.1:"))
	th := sidecartest.Start(t, replica, nil, kvFactory(nil))
	r := do(t, "PUT", th.API+"/v1/kv/a", `{"value":"x"}`)
	if r.Status != 503 || r.Code() != "redis_readonly" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("PUT on a replica: got %d %s, want 503 redis_readonly", r.Status, r.Body)
	}
	if rd := do(t, "GET", th.Ops+"/readyz", ""); rd.Status != 503 || !strings.Contains(rd.Body, "read-only replica") {
		t.Fatalf("readyz on a replica after a refused write: %d %s", rd.Status, rd.Body)
	}
}

func TestRedisBusyScriptIs503RedisBusy(t *testing.T) {
	srv := redisstoretest.NewReal(t, "--busy-reply-threshold", "50")
	th := sidecartest.Start(t, srv, envconf.Env{"SIDECAR_REQUEST_TIMEOUT": "5s"}, kvFactory(nil))
	busy := srv.Client(t)
	done := make(chan struct{})
	go func() { // a script that spins until SCRIPT KILL
		defer close(done)
		_ = busy.Do(context.Background(), busy.B().Eval().Script("while true do end").Numkeys(0).Build()).Error()
	}()
	time.Sleep(200 * time.Millisecond) // past the busy threshold
	r := do(t, "GET", th.API+"/v1/kv/a", "")
	kill := srv.Client(t)
	_ = kill.Do(context.Background(), kill.B().ScriptKill().Build()).Error()
	<-done
	if r.Status != 503 || r.Code() != "redis_busy" {
		t.Fatalf("GET while a script runs: got %d %s, want 503 redis_busy", r.Status, r.Body)
	}
}

// A request that runs into its own deadline while Redis answers its health
// checks is a slow call, not an outage: 503 timeout, and Redis stays up.
func TestRequestDeadlineIsNotAnOutage(t *testing.T) {
	srv := redisstoretest.NewReal(t, "--enable-debug-command", "yes")
	th := sidecartest.Start(t, srv, envconf.Env{"SIDECAR_REQUEST_TIMEOUT": "100ms"}, kvFactory(nil))
	sleeper := srv.Client(t)
	done := make(chan error, 1)
	go func() { // shorter than the health check's 1 s timeout
		done <- sleeper.Do(context.Background(), sleeper.B().Arbitrary("DEBUG", "SLEEP", "0.4").Build()).Error()
	}()
	time.Sleep(50 * time.Millisecond)
	r := do(t, "GET", th.API+"/v1/kv/a", "")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.Status != 503 || r.Code() != "timeout" {
		t.Fatalf("GET past its deadline: got %d %s, want 503 timeout", r.Status, r.Body)
	}
	if m := do(t, "GET", th.Ops+"/metrics", ""); !strings.Contains(m.Body, "sidecar_redis_up 1") {
		t.Fatalf("a request's deadline marked Redis down: %s", grepLines(m.Body, "sidecar_redis_up"))
	}
}
