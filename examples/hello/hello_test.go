package hello_test

import (
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
