package hello_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/examples/hello"
	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// helloSHA1 pins hello.lua as lua/testdata/scripts.sha1 pins the stock
// scripts: an edit to the script shows in review here.
const helloSHA1 = "3164c97d9a4c8b7715d91b2e1dc05532e30204c8"

// The stock modules plus hello, as cmd/sidecar-hello runs them, on every
// backend: the route answers, the counter key carries its TTL, the metric
// and the script's series are on /metrics, and readiness loaded the script.
func TestHello(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"HELLO_GREETING": "Howdy"}, append(modules.All(), hello.Factory)...)
		// The script metrics belong to the process (every host in it shows
		// them), so this subtest counts from what earlier ones left.
		const scriptRuns = `sidecar_redis_script_duration_seconds_count{script="hello"}`
		runsBefore := value(t, h.Metrics(t), scriptRuns)

		for _, want := range []string{`{"greeting":"Howdy, alice!","count":1}`, `{"greeting":"Howdy, alice!","count":2}`} {
			if r := h.Do(t, "POST", "/v1/users/alice/hello", ""); r.Status != 200 || r.Body != want+"\n" {
				t.Fatalf("POST hello: got %d %q, want 200 %s", r.Status, r.Body, want)
			}
		}
		if r := h.Do(t, "POST", "/v1/users/bob/hello", ""); r.Body != `{"greeting":"Howdy, bob!","count":1}`+"\n" {
			t.Fatalf("another user's count: got %d %q", r.Status, r.Body)
		}
		if r := h.Do(t, "POST", "/v1/users/not:an:id/hello", ""); r.Status != 400 || r.Code() != "invalid_id" {
			t.Fatalf("bad user id: got %d %s, want 400 invalid_id", r.Status, r.Body)
		}

		c := srv.Client(t)
		ttl, err := c.Do(t.Context(), c.B().Ttl().Key("sidecar_hello:alice").Build()).AsInt64()
		if err != nil || ttl <= 0 || ttl > int64(hello.CounterTTL.Seconds()) {
			t.Fatalf("TTL sidecar_hello:alice: got %d (%v), want 1-%d", ttl, err, int64(hello.CounterTTL.Seconds()))
		}

		// The key is the module's own: no family of the stock keyspace
		// claims it (not even as a lock name), on either layout.
		for _, l := range []redisstore.Layout{{}, {Cluster: true}} {
			if f := l.MatchAll("sidecar_hello:alice"); len(f) != 0 {
				t.Errorf("the stock keyspace (cluster %v) claims sidecar_hello:alice as %v", l.Cluster, f)
			}
		}

		m := h.Metrics(t)
		for _, want := range []string{
			"sidecar_hello_greetings_total 3\n",
			`sidecar_http_requests_total{code="200",route="POST /v1/users/{user_id}/hello"} 3` + "\n",
		} {
			if !strings.Contains(m, want) {
				t.Errorf("metrics lack %q", want)
			}
		}

		if runs := value(t, m, scriptRuns) - runsBefore; runs != 3 {
			t.Errorf("%s grew by %v, want 3", scriptRuns, runs)
		}

		// Readiness loads every script (here on a loaded machine, under -race,
		// miniredis compiles each one): ask until it answers, for 10 s at most.
		var r sidecartest.Reply
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if r = sidecartest.Do(t, "GET", h.Ops+"/readyz", ""); r.Status == 200 || time.Now().After(deadline) {
				break
			}
		}
		if r.Status != 200 {
			t.Fatalf("readyz: %d %s", r.Status, r.Body)
		}
		script := helloScript(t)
		if script.SHA1() != helloSHA1 {
			t.Errorf("hello.lua's SHA1 is %s, pinned %s: review the script change, then update helloSHA1", script.SHA1(), helloSHA1)
		}
		for addr, node := range c.Nodes() {
			loaded, err := node.Do(t.Context(), node.B().ScriptExists().Sha1(script.SHA1()).Build()).AsIntSlice()
			if err != nil || len(loaded) != 1 || loaded[0] != 1 {
				t.Errorf("SCRIPT EXISTS hello on %s after /readyz: got %v %v, want [1]", addr, loaded, err)
			}
		}
	})
}

// value is the sample of series in a /metrics text.
func value(t *testing.T, metrics, series string) float64 {
	t.Helper()
	for line := range strings.Lines(metrics) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("metrics lack %s", series)
	return 0
}

// helloScript is the module's script as lua.New registered it.
func helloScript(t *testing.T) *lua.Script {
	t.Helper()
	for _, s := range lua.All() {
		if s.Name == "hello" {
			return s
		}
	}
	t.Fatal("lua.All() lacks the hello script")
	return nil
}

// A bad HELLO_GREETING stops the sidecar at start with an error naming the
// variable, as a bad stock setting does (sidecar.Main prints it and exits 1).
func TestBadGreetingNamesTheVariable(t *testing.T) {
	srv := redisstoretest.New(t)
	for _, c := range []struct{ name, value, want string }{
		{"too long", strings.Repeat("x", hello.MaxGreetingLength+1), `HELLO_GREETING: "` + strings.Repeat("x", hello.MaxGreetingLength+1) + `" must be 1-64 bytes of printable UTF-8`},
		{"control character", "Hi\x07", `HELLO_GREETING: "Hi\a" must be 1-64 bytes of printable UTF-8`},
		{"not UTF-8", "Hi\xff", `HELLO_GREETING: "Hi\xff" must be 1-64 bytes of printable UTF-8`},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := envconf.Env{"HELLO_GREETING": c.value, "REDIS_URL": srv.URL(),
				"SIDECAR_LISTEN_ADDR": "127.0.0.1:0", "SIDECAR_OPS_ADDR": "127.0.0.1:0"}
			err := sidecar.Run(t.Context(), env, io.Discard, append(modules.All(), hello.Factory))
			var bad *envconf.Error
			if !errors.As(err, &bad) || bad.Var != "HELLO_GREETING" || err.Error() != c.want {
				t.Fatalf("got %v, want the envconf error %s", err, c.want)
			}
		})
	}
}

// cmd/sidecar-hello builds with nothing but the module API, and the binary
// is the sidecar: it answers --version as cmd/sidecar does.
func TestBinaryBuildsAndRuns(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sidecar-hello")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/sidecar-hello").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/hello/cmd/sidecar-hello: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "sidecar ") {
		t.Fatalf("sidecar-hello --version: got %q %v, want \"sidecar <version> (revision ...)\"", out, err)
	}
}

// helloSessionSHA1 pins hello_session.lua's own text (the script Redis runs
// also holds the stock libraries it includes, which change with them).
const helloSessionSHA1 = "b03597815f1d245149cd118fd9a33133150ee923"

// The session route's key is of the module's own session family, which no
// stock file names: the stock session scripts slide its TTL with the
// session's (PUT .../ttl) and delete it with the session (DELETE), on every
// backend; another session's key is left alone, and a key of another type
// is refused before anything is written.
func TestSessionHello(t *testing.T) {
	b, err := os.ReadFile("hello_session.lua")
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha1.Sum(b); hex.EncodeToString(sum[:]) != helloSessionSHA1 {
		t.Errorf("hello_session.lua's SHA1 is %x, pinned %s: review the script change, then update helloSessionSHA1", sum, helloSessionSHA1)
	}
	if !slices.Contains(redisstore.SessionPrefixes(), hello.SessionFamily.Prefix) {
		t.Fatalf("SessionPrefixes() = %q lacks the module's family", redisstore.SessionPrefixes())
	}
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"HELLO_GREETING": "Howdy", "SESSION_TTL_SECONDS": "3600"},
			append(modules.All(), hello.Factory)...)
		checkSessionKey(t, srv, func(method, path, body string) sidecartest.Reply { return h.Do(t, method, path, body) })

		// A key of another type where the counter lives: 409, nothing written.
		c := srv.Client(t)
		l := srv.Layout()
		bad := l.SessionKey(hello.SessionFamily, "alice", "s3")
		if err := c.Do(t.Context(), c.B().Hset().Key(bad).FieldValue().FieldValue("x", "1").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if r := h.Do(t, "POST", "/v1/users/alice/sessions/s3/hello", ""); r.Status != 409 || r.Code() != "key_wrong_type" {
			t.Fatalf("POST hello over a hash: got %d %s, want 409 key_wrong_type", r.Status, r.Body)
		}
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(l.Session("alice", "s3").Record).Build()).AsInt64(); n != 0 {
			t.Error("a refused hello wrote the session record")
		}
		if r := h.Do(t, "POST", "/v1/users/alice/sessions/not:an:id/hello", ""); r.Status != 400 || r.Code() != "invalid_id" {
			t.Fatalf("bad session id: got %d %s, want 400 invalid_id", r.Status, r.Body)
		}
	})
}

// checkSessionKey drives the session route through do on a host whose
// SESSION_TTL_SECONDS is 3600, and checks the key of srv: made with the
// session's TTL, slid to the session's own TTL and persisted with it by
// the stock ttl route, deleted by the stock session delete.
func checkSessionKey(t *testing.T, srv *redisstoretest.Server, do func(method, path, body string) sidecartest.Reply) {
	t.Helper()
	c := srv.Client(t)
	l := srv.Layout()
	key, other := l.SessionKey(hello.SessionFamily, "alice", "s1"), l.SessionKey(hello.SessionFamily, "alice", "s2")
	ttl := func(k string) int64 {
		t.Helper()
		n, err := c.Do(t.Context(), c.B().Ttl().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatalf("TTL %s: %v", k, err)
		}
		return n
	}
	for i, want := range []string{
		`{"greeting":"Howdy, alice!","session_id":"s1","count":1,"user_count":1}`,
		`{"greeting":"Howdy, alice!","session_id":"s1","count":2,"user_count":2}`,
	} {
		if r := do("POST", "/v1/users/alice/sessions/s1/hello", ""); r.Status != 200 || r.Body != want+"\n" {
			t.Fatalf("POST session hello %d: got %d %q, want 200 %s", i+1, r.Status, r.Body, want)
		}
	}
	if r := do("POST", "/v1/users/alice/sessions/s2/hello", ""); r.Status != 200 || !strings.Contains(r.Body, `"count":1,"user_count":3}`) {
		t.Fatalf("POST session hello s2: %d %s, want count 1 and the user's 3", r.Status, r.Body)
	}
	if n := ttl(key); n <= 3500 || n > 3600 {
		t.Fatalf("TTL %s after the greetings: %d, want the session's 3600", key, n)
	}
	// The greeting started the session as any stock write does.
	if r := do("GET", "/v1/users/alice/sessions/s1", ""); r.Status != 200 || !strings.Contains(r.Body, `"status":"running"`) {
		t.Fatalf("GET the session: %d %s", r.Status, r.Body)
	}

	// The stock ttl route knows nothing of hello, yet moves its key.
	if r := do("PUT", "/v1/users/alice/sessions/s1/ttl", `{"ttl_seconds":120}`); r.Status != 200 {
		t.Fatalf("PUT ttl: %d %s", r.Status, r.Body)
	}
	rec := l.Session("alice", "s1").Record
	if n, r := ttl(key), ttl(rec); n <= 100 || n > 120 || r <= 100 || r > 120 {
		t.Fatalf("TTL after PUT ttl 120: %s %d, record %d; want both the session's 120", key, n, r)
	}
	if r := do("PUT", "/v1/users/alice/sessions/s1/ttl", `{"ttl_seconds":0}`); r.Status != 200 {
		t.Fatalf("PUT ttl 0: %d %s", r.Status, r.Body)
	}
	if n := ttl(key); n != -1 {
		t.Fatalf("TTL %s after PUT ttl 0: %d, want -1 (persisted with the session)", key, n)
	}
	if r := do("PUT", "/v1/users/alice/sessions/s1/ttl", `{"ttl_seconds":600}`); r.Status != 200 {
		t.Fatalf("PUT ttl 600: %d %s", r.Status, r.Body)
	}
	if n := ttl(key); n <= 500 || n > 600 {
		t.Fatalf("TTL %s after PUT ttl 600: %d", key, n)
	}

	// The stock delete removes it with the session's other keys.
	if r := do("DELETE", "/v1/users/alice/sessions/s1", ""); r.Status != 204 {
		t.Fatalf("DELETE the session: %d %s", r.Status, r.Body)
	}
	n, err := c.Do(t.Context(), c.B().Exists().Key(key, rec).Build()).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("EXISTS %s %s after DELETE: %d %v, want 0", key, rec, n, err)
	}
	if v, err := c.Do(t.Context(), c.B().Get().Key(other).Build()).ToString(); err != nil || v != "1" {
		t.Fatalf("another session's counter %s: %q %v, want 1", other, v, err)
	}
	// The key is the family's, and of no stock family.
	if f, ok := l.Match(other); !ok || f.Name != hello.SessionFamily.Name {
		t.Errorf("%s matches %q (%v), want the module's family", other, f.Name, ok)
	}
}

// greetUsers answers the session greetings of alice (sessions s1 and s2)
// and bob (s1) on a host with the module.
func greetUsers(t *testing.T, h *sidecartest.Host) {
	t.Helper()
	for _, p := range []string{"/v1/users/alice/sessions/s1/hello", "/v1/users/alice/sessions/s2/hello", "/v1/users/bob/sessions/s1/hello"} {
		if r := h.Do(t, "POST", p, ""); r.Status != 200 {
			t.Fatalf("POST %s: %d %s", p, r.Status, r.Body)
		}
	}
}

// The module's user key (of its user family) lives as long as the user's
// sessions: the first session greeting makes it with the session's TTL,
// and the writes of any session of the user give it at least that
// session's TTL again (a stock append here, which knows nothing of hello).
func TestUserKeySlidesWithTheSessions(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"HELLO_GREETING": "Howdy", "SESSION_TTL_SECONDS": "3600"},
			append(modules.All(), hello.Factory)...)
		c := srv.Client(t)
		l := srv.Layout()
		key := l.UserKey(hello.UserFamily, "alice")
		greetUsers(t, h)
		if v, err := c.Do(t.Context(), c.B().Get().Key(key).Build()).ToString(); err != nil || v != "2" {
			t.Fatalf("GET %s: %q %v, want 2 (the greetings of both sessions)", key, v, err)
		}
		pttl := func() int64 {
			t.Helper()
			n, err := c.Do(t.Context(), c.B().Pttl().Key(key).Build()).AsInt64()
			if err != nil {
				t.Fatalf("PTTL %s: %v", key, err)
			}
			return n
		}
		if n := pttl(); n <= 3500*1000 || n > 3600*1000 {
			t.Fatalf("PTTL %s after the greetings: %d ms, want the session's 3600 s", key, n)
		}
		if f, ok := l.Match(key); !ok || f.Name != hello.UserFamily.Name {
			t.Errorf("%s matches %q (%v), want the module's user family", key, f.Name, ok)
		}
		// As if most of the TTL had passed since the last greeting.
		if err := c.Do(t.Context(), c.B().Pexpire().Key(key).Milliseconds(5000).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if r := h.Do(t, "POST", "/v1/users/alice/sessions/s3/entries", `{"question":"q","answer":"a"}`); r.Status != 201 {
			t.Fatalf("append: %d %s", r.Status, r.Body)
		}
		if n := pttl(); n <= 5000 || n > 3600*1000 {
			t.Errorf("PTTL %s after a write of another session of the user: %d ms, want that session's 3600 s again", key, n)
		}
	})
}

// The stock erasure (DELETE /v1/users/{u}), which unlinks the keys of
// every registered user family, erases the module's user key with the
// user, though no stock file names it; another user's is left alone.
func TestUserKeyErasedWithTheUser(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"HELLO_GREETING": "Howdy"}, append(modules.All(), hello.Factory)...)
		c := srv.Client(t)
		l := srv.Layout()
		key, other := l.UserKey(hello.UserFamily, "alice"), l.UserKey(hello.UserFamily, "bob")
		greetUsers(t, h)
		for i := 0; ; i++ {
			r := h.Do(t, "DELETE", "/v1/users/alice", "")
			if r.Status == 200 {
				break
			}
			if r.Status != 202 || i == 100 {
				t.Fatalf("DELETE /v1/users/alice: %d %s", r.Status, r.Body)
			}
		}
		if n, err := c.Do(t.Context(), c.B().Exists().Key(key).Build()).AsInt64(); err != nil || n != 0 {
			t.Errorf("EXISTS %s after the user's erasure: %d %v, want 0", key, n, err)
		}
		if v, err := c.Do(t.Context(), c.B().Get().Key(other).Build()).ToString(); err != nil || v != "1" {
			t.Errorf("another user's key %s: %q %v, want 1", other, v, err)
		}
	})
}

// The built binary on a real redis-server: the module's session key slides
// and is deleted with the session, exactly as in the test host.
func TestBinarySessionKey(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	bin := filepath.Join(t.TempDir(), "sidecar-hello")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/sidecar-hello").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/hello/cmd/sidecar-hello: %v\n%s", err, out)
	}
	apiPort, err := redisstoretest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	opsPort, err := redisstoretest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api, ops := fmt.Sprintf("http://127.0.0.1:%d", apiPort), fmt.Sprintf("http://127.0.0.1:%d", opsPort)
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "REDIS_URL=" + srv.URL(), "HELLO_GREETING=Howdy", "SESSION_TTL_SECONDS=3600",
		"SIDECAR_LISTEN_ADDR=" + api[len("http://"):], "SIDECAR_OPS_ADDR=" + ops[len("http://"):]}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("sidecar-hello stderr:\n%s", stderr.String())
		}
	}()
	sidecartest.NewClient(t, ops).WaitServing(t, "/readyz", 20*time.Second)
	checkSessionKey(t, srv, func(method, path, body string) sidecartest.Reply { return sidecartest.Do(t, method, api+path, body) })

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the deferred wait
		if err != nil {
			t.Fatalf("sidecar-hello after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sidecar-hello still running 30 s after SIGTERM")
	}
}
