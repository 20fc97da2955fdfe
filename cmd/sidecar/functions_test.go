package main

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// recorded is one script call as the sidecar sent it.
type recorded struct {
	script     *lua.Script
	keys, args []string
}

// TestScriptsAgreeOnBothPaths records every script call of a drive through
// every route, then replays the calls, in order, on two fresh
// redis-servers: one through Redis Functions (FCALL of the libraries), one
// through EVALSHA (a user whose ACL refuses FUNCTION and FCALL, which the
// sidecar must take to mean EVALSHA). Every answer and, at the end, every
// key's type, value and whether it has a TTL must be the same on both,
// up to times (the two runs are not in the same microsecond). Every
// registered script must have run.
func TestScriptsAgreeOnBothPaths(t *testing.T) {
	rec := redisstoretest.NewReal(t)
	h := sidecartest.Start(t, rec, nil, modules.All()...)
	var mu sync.Mutex
	var calls []recorded
	stop := lua.Observe(func(s *lua.Script, keys, args []string) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, recorded{s, slices.Clone(keys), slices.Clone(args)})
	})
	driveEveryRoute(t, h)
	searchIndexCalls(t, h, rec)
	// some scripts run off the answer path (the search indexer's re-index
	// after a PATCH): give them a moment
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := 0
		for _, c := range calls {
			if c.script == lua.Named("session_search_catchup") || c.script == lua.Named("session_search_entry") {
				n++
			}
		}
		mu.Unlock()
		if n >= 2 {
			break
		}
	}
	stop()
	if t.Failed() {
		t.FailNow()
	}
	calls = append(calls, unreached(t, rec, calls)...)

	fsrv, esrv := redisstoretest.NewReal(t), redisstoretest.NewReal(t)
	if reply, err := redisstoretest.RawCommand(esrv.Addr, "ACL SETUSER evalonly on >pw ~* &* +@all -function -fcall -fcall_ro", 5*time.Second); err != nil || reply != "+OK" {
		t.Fatalf("ACL SETUSER: %q %v", reply, err)
	}
	fc := fsrv.Client(t)
	ec, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{esrv.Addr}, Username: "evalonly", Password: "pw",
		DisableCache: true, DisableRetry: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	for _, c := range []rueidis.Client{fc, ec} {
		if err := lua.Load(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	if got := lua.Path(fc); got != "functions" {
		t.Fatalf("path of the default user: %q, want functions", got)
	}
	if got := lua.Path(ec); !strings.HasPrefix(got, "evalsha (") || !strings.Contains(got, "NOPERM") {
		t.Fatalf("path of a user refused FUNCTION: %q, want evalsha (NOPERM ...)", got)
	}

	ran := map[string]bool{}
	for i, call := range calls {
		ran[call.script.Name] = true
		f := call.script.Exec(t.Context(), fc, call.keys, call.args)
		e := call.script.Exec(t.Context(), ec, call.keys, call.args)
		if got, want := answer(f), answer(e); !sameAnswer(got, want) {
			t.Errorf("call %d, %s %q %q:\nFCALL:   %s\nEVALSHA: %s", i, call.script.Name, call.keys, call.args, got, want)
		}
	}
	var missed []string
	for _, s := range lua.All() {
		if !ran[s.Name] {
			missed = append(missed, s.Name)
		}
	}
	if len(missed) > 0 {
		t.Errorf("scripts the drive did not run (%d calls): %v", len(calls), missed)
	}
	if got, want := dumpAll(t, fc), dumpAll(t, ec); got != want {
		t.Errorf("Redis after the replay differs:\nFCALL:\n%s\nEVALSHA:\n%s", got, want)
	}
	if stats := commandCalls(t, fc); stats["fcall"] == 0 || stats["evalsha"] != 0 {
		t.Errorf("functions server ran %v, want only FCALL", stats)
	}
	if stats := commandCalls(t, ec); stats["fcall"] != 0 || stats["evalsha"] == 0 {
		t.Errorf("EVALSHA server ran %v, want only EVALSHA", stats)
	}
}

// searchIndexCalls drives the search index's catch-up of an entry another
// program appended (a relevance search indexes it first) and the re-index
// of an entry whose answer changed.
func searchIndexCalls(t *testing.T, h *sidecartest.Host, rec *redisstoretest.Server) {
	t.Helper()
	base := "/v1/users/fnuser/sessions/fn-search"
	if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"f1","question":"where is the red door","answer":"left"}`); r.Status != 201 {
		t.Fatalf("append: %d %s", r.Status, r.Body)
	}
	rc := rec.Client(t)
	cognee := `{"qa_id": "f2", "question": "blue window", "context": "", "answer": "right", "time": "2026-01-02T03:04:05.000006", "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null}`
	if err := rc.Do(t.Context(), rc.B().Rpush().Key("agent_sessions:fnuser:fn-search").Element(cognee).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if r := h.Do(t, "GET", base+"/search?q=blue&rank=relevance", ""); r.Status != 200 || !strings.Contains(r.Body, "f2") {
		t.Fatalf("relevance search: %d %s, want f2 found", r.Status, r.Body)
	}
	if r := h.Do(t, "PATCH", base+"/entries/f1", `{"answer":"the red door is on the right"}`); r.Status != 200 {
		t.Fatalf("PATCH: %d %s", r.Status, r.Body)
	}
}

// unreached is a call of each script the drive does not reach (the
// routes call them only past a step's size or when a listing meets an
// expired session): an index step of each list of every session the drive
// wrote, and a prune of every metadata index of a session that is gone.
func unreached(t *testing.T, rec *redisstoretest.Server, calls []recorded) []recorded {
	var out []recorded
	seen := map[string]bool{}
	for _, c := range calls {
		// an append's KEYS (the record, the marker) and its first two
		// ARGV (the core's settings, SESSION_MAX_ENTRIES) are an index
		// step's
		if c.script != lua.Named("session_append") || seen[c.keys[0]] {
			continue
		}
		seen[c.keys[0]] = true
		for _, which := range []string{"qa", "context"} {
			out = append(out, recorded{lua.Named("session_index_build"), c.keys, append(slices.Clone(c.args[:2]), which)})
		}
	}
	rc := rec.Client(t)
	metas, err := rc.Do(t.Context(), rc.B().Keys().Pattern("agent_session_meta*").Build()).AsStrSlice()
	if err != nil || len(metas) == 0 {
		t.Fatalf("metadata indexes after the drive: %q %v", metas, err)
	}
	for _, k := range metas {
		members, _ := rc.Do(t.Context(), rc.B().Zrange().Key(k).Min("0").Max("-1").Build()).AsStrSlice()
		for _, m := range members {
			out = append(out, recorded{lua.SessionMetaPrune, []string{k, "agent_session_record:nobody:gone"}, []string{m}})
		}
	}
	// the app state's own script runs on Cluster only (standalone Redis
	// writes it in the event's script)
	out = append(out, recorded{lua.Named("adk_app"), []string{"adk_app_state:weather"}, []string{"262144", "604800", "1000", "visits", "2"}})
	return out
}

var (
	digests    = regexp.MustCompile(`\b[0-9a-f]{40}\b`)
	isoTimes   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`)
	longNums   = regexp.MustCompile(`\d{10,}(-\d+)?(\.\d+)?(e\+\d+)?`)
	scriptLine = regexp.MustCompile(`user_(script|function):\d+:|, on @user_(script|function):\d+\.| script: [0-9a-z_]+`)
)

// masked is s with times (ISO times, µs or ms since the epoch, stream ids,
// SHA1 digests)
// and a script error's place (line, script or function name) left out.
func masked(s string) string {
	s = digests.ReplaceAllString(s, "<sha1>") // the blocks' digest covers their times
	s = isoTimes.ReplaceAllString(s, "<time>")
	s = longNums.ReplaceAllString(s, "<n>")
	return scriptLine.ReplaceAllString(s, "")
}

// answer is a script's reply (or error) as text, masked.
func answer(r rueidis.RedisResult) string {
	if err := r.Error(); err != nil {
		return masked("error: " + err.Error())
	}
	v, err := r.ToAny()
	if err != nil {
		return masked("error: " + err.Error())
	}
	return masked(fmt.Sprint(v))
}

var number = regexp.MustCompile(`-?\d+`)

// sameAnswer compares two masked answers, allowing numbers of 1000 and more
// to differ by 1 %: remaining TTLs (ms or s) read a moment apart.
func sameAnswer(a, b string) bool {
	if a == b {
		return true
	}
	if number.ReplaceAllString(a, "0") != number.ReplaceAllString(b, "0") {
		return false
	}
	na, nb := number.FindAllString(a, -1), number.FindAllString(b, -1)
	for i := range na {
		x, _ := strconv.ParseInt(na[i], 10, 64)
		y, _ := strconv.ParseInt(nb[i], 10, 64)
		if x != y && (x < 1000 || y < 1000 || max(x-y, y-x)*100 > max(x, y)) {
			return false
		}
	}
	return true
}

// dumpAll lists every key (small test data: whole reads are fine here)
// with its type, masked value and whether it has a TTL, sorted.
func dumpAll(t *testing.T, c rueidis.Client) string {
	t.Helper()
	ctx := t.Context()
	keys, err := c.Do(ctx, c.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		typ, _ := c.Do(ctx, c.B().Type().Key(k).Build()).ToString()
		var v any
		switch typ {
		case "string":
			v, _ = c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
		case "list":
			v, _ = c.Do(ctx, c.B().Lrange().Key(k).Start(0).Stop(-1).Build()).AsStrSlice()
		case "hash":
			m, _ := c.Do(ctx, c.B().Hgetall().Key(k).Build()).AsStrMap()
			pairs := make([]string, 0, len(m))
			for f, x := range m {
				pairs = append(pairs, f+"="+x)
			}
			sort.Strings(pairs)
			v = pairs
		case "zset":
			v, _ = c.Do(ctx, c.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).ToAny()
		case "set":
			m, _ := c.Do(ctx, c.B().Smembers().Key(k).Build()).AsStrSlice()
			sort.Strings(m)
			v = m
		case "stream":
			v, _ = c.Do(ctx, c.B().Xrange().Key(k).Start("-").End("+").Build()).ToAny()
		}
		ttl, _ := c.Do(ctx, c.B().Pttl().Key(k).Build()).AsInt64()
		fmt.Fprintf(&b, "%s %s ttl:%v %s\n", k, typ, ttl > 0, masked(fmt.Sprint(v)))
	}
	return b.String()
}

var cmdstat = regexp.MustCompile(`cmdstat_([a-z_|]+):calls=(\d+)`)

// commandCalls is INFO commandstats' calls by command.
func commandCalls(t *testing.T, c rueidis.Client) map[string]int {
	t.Helper()
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range cmdstat.FindAllStringSubmatch(info, -1) {
		var n int
		fmt.Sscan(m[2], &n)
		out[m[1]] = n
	}
	return out
}

func TestSameAnswer(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"[1 30000 worker-1]", "[1 29999 worker-1]", true},
		{"[1 604800]", "[1 604790]", true},
		{"[1 30000]", "[1 20000]", false},
		{"[2 7]", "[1 7]", false},
		{"[12 a]", "[13 a]", false},
		{"[1 a]", "[1 b]", false},
	} {
		if got := sameAnswer(c.a, c.b); got != c.want {
			t.Errorf("sameAnswer(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
