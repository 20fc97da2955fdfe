package locks_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// python is Debian's interpreter, for which python3-redis installs (not a
// pyenv python3 that may come first on PATH).
const python = "/usr/bin/python3"

// requireRedisPy skips when redis-py is absent, except in CI (CI=true),
// where its absence is a failure: .ci/run installs python3-redis.
func requireRedisPy(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import redis").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s cannot import redis (apt-get install python3-redis): %v", python, err)
		}
		t.Skipf("redis-py not installed for %s (apt-get install python3-redis): %v", python, err)
	}
}

// pylock runs testdata/pylock.py: redis-py's own Lock.
func pylock(t *testing.T, url string, args ...string) string {
	t.Helper()
	out, err := exec.Command(python, append([]string{"testdata/pylock.py", url}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pylock %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestRedisPyInterop: a redis-py Lock and a sidecar caller on the same name
// exclude each other both ways, and each side's token works on the other.
func TestRedisPyInterop(t *testing.T) {
	requireRedisPy(t)
	s := redisstoretest.NewReal(t)
	h := sidecartest.Start(t, s, nil, locks.Factory)

	// Python holds: the sidecar is refused, then waits and gets the lock
	// once Python releases (the re-check notices: redis-py publishes nothing).
	pyToken := pylock(t, s.URL(), "graph_lock", "acquire", "60000", "0")
	if pyToken == "-" {
		t.Fatal("redis-py could not take a free lock")
	}
	r := do(t, t.Context(), "POST", h.API+"/v1/locks/graph_lock", `{}`)
	if r.status != 409 || r.code() != "lock_held" {
		t.Fatalf("sidecar acquire while redis-py holds: got %d %s, want 409 lock_held", r.status, r.body)
	}
	if st := inspect(t, h.API, "graph_lock"); !st.Held || st.Owner != "" || st.FencingToken != 0 || *st.TTLMs < 50000 {
		t.Fatalf("inspect of a redis-py lock %+v, want held, ttl about 60 s, no owner or fence", st)
	}
	if r := do(t, t.Context(), "DELETE", h.API+"/v1/locks/graph_lock", tokenBody(strings.Repeat("f", 32))); r.status != 409 || r.code() != "not_owner" {
		t.Fatalf("sidecar release of redis-py's lock with another token: got %d %s, want 409 not_owner", r.status, r.body)
	}
	got := make(chan reply, 1)
	go func() {
		got <- do(t, t.Context(), "POST", h.API+"/v1/locks/graph_lock", `{"wait_ms":10000,"owner":"go"}`)
	}()
	time.Sleep(200 * time.Millisecond)
	if out := pylock(t, s.URL(), "graph_lock", "release", pyToken); out != "released" {
		t.Fatalf("redis-py release: %s", out)
	}
	r = <-got
	if r.status != 200 {
		t.Fatalf("sidecar waiter after redis-py released: got %d %s, want 200", r.status, r.body)
	}
	g := decode[grant](t, r)

	// The sidecar holds: redis-py is refused (non-blocking and blocking),
	// sees the sidecar's token as the lock's, and gets it after release.
	if out := pylock(t, s.URL(), "graph_lock", "acquire", "60000", "0"); out != "-" {
		t.Fatalf("redis-py took a lock the sidecar holds (token %s)", out)
	}
	if out := pylock(t, s.URL(), "graph_lock", "owned", g.Token); out != "True" {
		t.Fatalf("redis-py Lock.owned() with the sidecar's token: %s, want True", out)
	}
	blocked := make(chan string, 1)
	go func() {
		out, _ := exec.Command(python, "testdata/pylock.py", s.URL(), "graph_lock", "acquire", "60000", "10").Output()
		blocked <- strings.TrimSpace(string(out))
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case out := <-blocked:
		t.Fatalf("blocking redis-py acquire returned %q while the sidecar holds the lock", out)
	default:
	}
	if r := do(t, t.Context(), "DELETE", h.API+"/v1/locks/graph_lock", tokenBody(g.Token)); r.status != 200 {
		t.Fatalf("sidecar release: got %d %s", r.status, r.body)
	}
	pyToken = <-blocked
	if pyToken == "-" || pyToken == g.Token {
		t.Fatalf("blocking redis-py acquire after the sidecar released: %q, want a new token", pyToken)
	}

	// A sidecar caller may release redis-py's lock with redis-py's token
	// (both sides store the same thing), and a redis-py holder cannot be
	// refreshed with a wrong token.
	if r := do(t, t.Context(), "POST", h.API+"/v1/locks/graph_lock/refresh", `{"token":"`+pyToken+`","ttl_ms":90000}`); r.status != 200 {
		t.Fatalf("sidecar refresh with redis-py's token: got %d %s", r.status, r.body)
	}
	if r := do(t, t.Context(), "DELETE", h.API+"/v1/locks/graph_lock", tokenBody(pyToken)); r.status != 200 {
		t.Fatalf("sidecar release with redis-py's token: got %d %s", r.status, r.body)
	}
	if out := pylock(t, s.URL(), "graph_lock", "acquire", "1000", "0"); out == "-" {
		t.Fatal("redis-py could not take the lock after the sidecar released it")
	}
}
