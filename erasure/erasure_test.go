package erasure_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/erasure"
	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// TestMain shares one Redis Cluster among the package's cluster subtests
// (flushed before each) and stops it at the end.
func TestMain(m *testing.M) { os.Exit(redisstoretest.Main(m)) }

// start runs every module, the search index on (SEARCH_INDEX's default):
// its documents, postings and statistics are the user's data too.
func start(t testing.TB, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	return sidecartest.Start(t, srv, env, modules.All()...)
}

// ok sends one request and fails the test unless it answered a 2xx.
func ok(t testing.TB, h *sidecartest.Host, method, path, body string, header ...string) sidecartest.Reply {
	t.Helper()
	r := h.Do(t, method, path, body, header...)
	if r.Status < 200 || r.Status > 299 {
		t.Fatalf("%s %s: %s", method, path, r)
	}
	return r
}

// fill writes every kind of data of session s of user u through the API,
// with word (and the session id) in every text: Q&A entries and feedback,
// traces, context, messages on two branches with a compaction, a session
// block, a tool call, the frozen prompt, session state (and a user block
// and the user's state, naming neither),
// metadata, usage with an Idempotency-Key, custom events, a LangGraph
// checkpoint and its pending write. When from is not
// empty, s is first forked from session from (which must hold message m1).
func fill(t testing.TB, h *sidecartest.Host, u, s, word, from string) {
	t.Helper()
	base := "/v1/users/" + u + "/sessions/" + s
	if from != "" {
		ok(t, h, "POST", "/v1/users/"+u+"/sessions/"+from+"/fork",
			`{"at":"m1","session_id":"`+s+`","title":"fork `+word+`"}`, "Idempotency-Key", "fork-"+s)
	} else {
		ok(t, h, "POST", "/v1/users/"+u+"/sessions",
			`{"session_id":"`+s+`","title":"title `+word+`","metadata":{"topic":"`+word+`","sid":"`+s+`"}}`,
			"Idempotency-Key", "create-"+s)
	}
	ok(t, h, "PATCH", base, `{"title":"`+word+` retitled","metadata":{"topic":"`+word+`","sid":"`+s+`"}}`)
	ok(t, h, "POST", base+"/entries", `{"question":"where is `+word+`?","answer":"`+word+` in `+s+`","qa_id":"qa-`+s+`"}`)
	ok(t, h, "PUT", base+"/entries/qa-"+s+"/feedback", `{"feedback_text":"`+word+` good","feedback_score":5}`)
	ok(t, h, "POST", base+"/traces", `{"origin_function":"`+word+`","status":"ok","method_params":{"q":"`+word+`"}}`)
	ok(t, h, "POST", base+"/context", `{"id":"ctx-`+s+`","text":"`+word+` context"}`)
	if from == "" {
		ok(t, h, "POST", base+"/messages", `{"id":"m1","role":"user","content":"`+word+` first"}`, "Idempotency-Key", "msg-"+s)
	}
	ok(t, h, "PUT", base+"/messages/m2-"+s, `{"role":"assistant","content":"`+word+` answer","parent_id":"m1"}`)
	ok(t, h, "PUT", base+"/messages/m3-"+s, `{"role":"assistant","content":"`+word+` branch","parent_id":"m1"}`)
	ok(t, h, "POST", base+"/compactions", `{"summary":"`+word+` summary","from_id":"m1","to_id":"m2-`+s+`"}`)
	ok(t, h, "PUT", base+"/blocks/mem-"+s, `{"content":"`+word+` block","position":1}`)
	ok(t, h, "PUT", "/v1/users/"+u+"/blocks/umem", `{"content":"`+u+` user block"}`)
	ok(t, h, "POST", base+"/tools/set_context",
		`{"arguments":"{\"label\":\"mem-`+s+`\",\"content\":\" `+word+` tool\",\"action\":\"append\"}","tool_call_id":"call-`+s+`"}`)
	ok(t, h, "POST", base+"/system-prompt/refresh", "")
	ok(t, h, "PATCH", base+"/state", `{"note":"`+word+` state"}`)
	ok(t, h, "PATCH", "/v1/users/"+u+"/state", `{"note":"`+u+` user state"}`)
	ok(t, h, "POST", base+"/usage", `{"model":"gpt-4o-mini","tokens_in":12,"tokens_out":3}`, "Idempotency-Key", "use-"+s)
	ok(t, h, "POST", base+"/events", `{"event":"x-note","data":{"text":"`+word+` event"}}`, "Idempotency-Key", "ev-"+s)
	ok(t, h, "POST", base+"/checkpoints", `{"checkpoint_id":"cp-`+s+`","checkpoint":{"type":"json","data":"e30="},`+
		`"metadata":{"note":"`+word+` checkpoint"},"channel_versions":{"x":"1"},`+
		`"channel_values":[{"channel":"x","version":"1","type":"json","data":"e30="}]}`)
	ok(t, h, "POST", base+"/checkpoints/writes", `{"checkpoint_id":"cp-`+s+`","task_id":"task-`+s+`",`+
		`"writes":[{"idx":0,"channel":"x","type":"json","data":"e30="}]}`)
}

// dump is every key of the server with its type, value and whether it has
// a TTL, one line each (redisstoretest.Snapshot), sorted.
func dump(t *testing.T, srv *redisstoretest.Server) []string {
	t.Helper()
	keys := srv.Keys(t, "*")
	slices.Sort(keys)
	return redisstoretest.Snapshot(t, srv.Client(t), keys...)
}

// naming are the lines of dump that hold any of words, but for the key
// except.
func naming(lines []string, except string, words ...string) []string {
	var out []string
	for _, l := range lines {
		if except != "" && strings.HasPrefix(l, except+" ") {
			continue
		}
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// keysOf are the lines of dump whose key names user.
func keysOf(lines []string, user string) []string {
	var out []string
	for _, l := range lines {
		if k, _, _ := strings.Cut(l, " "); strings.Contains(k, user) {
			out = append(out, l)
		}
	}
	return out
}

func TestDeleteSessionForgets(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		fill(t, h, "alice", "base", "lighthouse", "")
		fill(t, h, "alice", "chat-1", "zanzibar", "base") // a fork of base
		fill(t, h, "alice", "keep", "marmalade", "")
		others := func() []string {
			d := dump(t, srv)
			return append(keysOf(d, "alice:base"), keysOf(d, "alice:keep")...)
		}
		before := others()
		if len(naming(dump(t, srv), "", "zanzibar", "chat-1")) == 0 {
			t.Fatal("the session under test wrote nothing")
		}
		if r := h.Do(t, "DELETE", "/v1/users/alice/sessions/chat-1", ""); r.Status != http.StatusNoContent {
			t.Fatalf("delete: %s", r)
		}
		// The one exception: the deleted session's event stream keeps its
		// `deleted` event for readers on every pod (lib/events.lua
		// TOMBSTONE_SECONDS) while someone watches. Its search index is two
		// of its own keys, and it leaves the user's list of indexed sessions.
		tomb := srv.Layout().SessionKey(redisstore.SessionEventsFamily, "alice", "chat-1")
		if left := naming(dump(t, srv), tomb, "zanzibar", "chat-1"); len(left) > 0 {
			t.Errorf("after the delete, Redis still names the session:\n%s", strings.Join(left, "\n"))
		}
		// the other sessions' keys are as they were, byte for byte
		if after := others(); !slices.Equal(after, before) {
			t.Errorf("other sessions' keys changed:\nbefore %q\nafter  %q", before, after)
		}
	})
}

func TestEraseUser(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		fill(t, h, "alice", "base", "lighthouse", "")
		fill(t, h, "alice", "chat-1", "zanzibar", "base")
		fill(t, h, "bob", "notes", "marmalade", "")
		ok(t, h, "POST", "/v1/users/alice/sessions/chat-1/complete", `{}`)
		c := srv.Client(t)
		ctx := t.Context()
		// a session only Cognee wrote, and the index members of a session
		// Redis expired before the sweep met it
		cognee := l.SessionKey(redisstore.EntriesFamily, "alice", "cognee-only")
		g := l.Global(l.Bucket("alice"))
		shared := l.MetaGlobal(l.Bucket("alice"), "topic", "shared")
		for _, cmd := range [][]string{
			{"RPUSH", cognee, `{"question":"quokka?","answer":"quokka"}`},
			{"EXPIRE", cognee, "3600"},
			{"ZADD", g.Index[0], "1", "alice:ghost"},
			{"ZADD", g.Expiry, "1", "alice:ghost"},
			// a metadata index across users holding a member of alice's
			// that expired with her own index of the pair
			{"ZADD", shared, "1", "alice:ghost", "2", "carol:c1"},
			{"EXPIRE", shared, "3600"},
		} {
			if err := c.Do(ctx, c.B().Arbitrary(cmd[0]).Keys(cmd[1]).Args(cmd[2:]...).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		bobBefore := keysOf(dump(t, srv), "bob")

		r := h.Do(t, "DELETE", "/v1/users/alice", "")
		if r.Status != http.StatusOK || strings.TrimSpace(r.Body) != `{"erased":true}` {
			t.Fatalf("erase: %s", r)
		}
		if left := naming(dump(t, srv), "", "alice", "lighthouse", "zanzibar", "quokka", "chat-1", "cognee-only", "ghost"); len(left) > 0 {
			t.Errorf("after the erasure, Redis still names alice:\n%s", strings.Join(left, "\n"))
		}
		if bobAfter := keysOf(dump(t, srv), "bob"); !slices.Equal(bobAfter, bobBefore) {
			t.Errorf("bob's data changed:\nbefore %q\nafter  %q", bobBefore, bobAfter)
		}
		if got, err := c.Do(ctx, c.B().Zrange().Key(shared).Min("0").Max("-1").Build()).AsStrSlice(); err != nil || !slices.Equal(got, []string{"carol:c1"}) {
			t.Errorf("%s: %q %v, want carol's member alone", shared, got, err)
		}
		gb := l.Global(l.Bucket("bob"))
		for _, k := range []string{gb.Index[0], gb.Expiry} {
			if n, err := c.Do(ctx, c.B().Zscore().Key(k).Member("bob:notes").Build()).AsFloat64(); err != nil || n <= 1 {
				t.Errorf("bob's member of %s: %v %v", k, n, err)
			}
		}
		// idempotent; writes refused while the erasure settles
		if r := h.Do(t, "DELETE", "/v1/users/alice", ""); r.Status != http.StatusOK || strings.TrimSpace(r.Body) != `{"erased":true}` {
			t.Fatalf("erase again: %s", r)
		}
		w := h.Do(t, "POST", "/v1/users/alice/sessions/s9/entries", `{"question":"q","answer":"a"}`)
		if w.Status != http.StatusConflict || w.Code() != "user_erasing" {
			t.Errorf("a write after the erasure: %s, want 409 user_erasing", w)
		}
		if w := h.Do(t, "PATCH", "/v1/users/alice/state", `{"a":"b"}`); w.Status != http.StatusConflict || w.Code() != "user_erasing" {
			t.Errorf("a user state write after the erasure: %s, want 409 user_erasing", w)
		}
		if left := naming(dump(t, srv), "", "alice"); len(left) > 0 {
			t.Errorf("refused writes left:\n%s", strings.Join(left, "\n"))
		}
		// bob writes on
		ok(t, h, "POST", "/v1/users/bob/sessions/notes/entries", `{"question":"q","answer":"a"}`)
		// the user's marker (the progress and the fence), in alice's slot,
		// names no one and holds the fence alone, for the settle time
		pk := l.UserMarker("alice")
		if ms, err := c.Do(ctx, c.B().Pttl().Key(pk).Build()).AsInt64(); err != nil || ms <= 0 || ms > erasure.Settle.Milliseconds() {
			t.Errorf("marker %s: PTTL %d ms %v, want at most %v", pk, ms, err, erasure.Settle)
		}
		if fs, err := c.Do(ctx, c.B().Hkeys().Key(pk).Build()).AsStrSlice(); err != nil || !slices.Equal(fs, []string{"fence"}) {
			t.Errorf("marker %s: fields %q %v, want the fence alone", pk, fs, err)
		}
		if h.Do(t, "DELETE", "/v1/users/a:b", "").Status != http.StatusBadRequest {
			t.Error("a bad user id was not refused")
		}
	})
}

// TestEraseInSteps: with one step per call, a user of many sessions takes
// several calls (202 with an estimate, then 200), made alternately on two
// sidecars: the progress is in Redis.
func TestEraseInSteps(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		env := envconf.Env{"USER_ERASE_STEPS_PER_CALL": "1"}
		hosts := []*sidecartest.Host{start(t, srv, env), start(t, srv, env)}
		const n = 3*erasure.SessionsPerStep + 5
		for i := range n {
			ok(t, hosts[0], "POST", fmt.Sprintf("/v1/users/alice/sessions/s%d/entries", i), `{"question":"walrus?","answer":"walrus"}`)
		}
		ok(t, hosts[0], "POST", "/v1/users/bob/sessions/b1/entries", `{"question":"q","answer":"a"}`)
		// a metadata index across users far bigger than a step's ZSCAN
		// budget, holding three expired members of alice's among 5 000
		l := srv.Layout()
		big := l.MetaGlobal(l.Bucket("alice"), "env", "prod")
		zadd := []string{}
		for i := range 5000 {
			zadd = append(zadd, strconv.Itoa(i), fmt.Sprintf("u%d:s", i))
		}
		zadd = append(zadd, "1", "alice:x1", "2500", "alice:x2", "6000", "alice:x3")
		c := srv.Client(t)
		if err := c.Do(t.Context(), c.B().Arbitrary("ZADD").Keys(big).Args(zadd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		var calls, accepted int
		prev := int64(n)
		for {
			calls++
			if calls > 10000 {
				t.Fatal("the erasure never finished")
			}
			r := hosts[calls%2].Do(t, "DELETE", "/v1/users/alice", "")
			if r.Status == http.StatusOK {
				break
			}
			if r.Status != http.StatusAccepted {
				t.Fatalf("call %d: %s", calls, r)
			}
			var a struct {
				Erased    bool   `json:"erased"`
				Remaining *int64 `json:"remaining"`
			}
			r.JSON(t, &a)
			if a.Erased || a.Remaining == nil || *a.Remaining < 1 {
				t.Fatalf("call %d: %s", calls, r.Body)
			}
			// one step erases at most SessionsPerStep sessions
			if *a.Remaining < prev-erasure.SessionsPerStep || *a.Remaining > prev {
				t.Errorf("call %d: remaining %d after %d", calls, *a.Remaining, prev)
			}
			prev = *a.Remaining
			accepted++
		}
		if accepted < 3 {
			t.Errorf("%d sessions erased after %d 202s, want at least 3 steps", n, accepted)
		}
		if left := naming(dump(t, srv), "", "alice", "walrus"); len(left) > 0 {
			t.Errorf("after the erasure:\n%s", strings.Join(left, "\n"))
		}
		if len(naming(dump(t, srv), "", "bob")) == 0 {
			t.Error("bob's session went too")
		}
		if n, err := c.Do(t.Context(), c.B().Zcard().Key(big).Build()).AsInt64(); err != nil || n != 5000 {
			t.Errorf("%s: %d members %v, want the 5 000 of other users", big, n, err)
		}
	})
}

// TestEraseRacingWriters: writers keep writing alice's sessions (new and
// old ones, entries, messages, usage, user state) while the erasure runs in
// small steps. Every write answers its success or 409 user_erasing, and
// once the erasure answered erased:true and the writers stopped, nothing
// of alice is left.
func TestEraseRacingWriters(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"USER_ERASE_STEPS_PER_CALL": "1"})
		for i := range 30 {
			ok(t, h, "POST", fmt.Sprintf("/v1/users/alice/sessions/s%d/entries", i), `{"question":"walrus?","answer":"walrus"}`)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		var refused, written atomic.Int64
		var bad sync.Map
		for w := range 4 {
			cl := sidecartest.NewClient(t, h.API)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					s := fmt.Sprintf("/v1/users/alice/sessions/w%d-%d", w, i%40)
					var r sidecartest.Reply
					switch i % 4 {
					case 0:
						r = cl.Send(ctx, "POST", s+"/entries", `{"question":"walrus?","answer":"walrus"}`)
					case 1:
						r = cl.Send(ctx, "POST", s+"/messages", fmt.Sprintf(`{"id":"m%d","role":"user","content":"walrus"}`, i))
					case 2:
						r = cl.Send(ctx, "POST", s+"/usage", `{"model":"m","tokens_in":1,"tokens_out":1}`)
					default:
						r = cl.Send(ctx, "PATCH", "/v1/users/alice/state", `{"k":"walrus"}`)
					}
					switch {
					case ctx.Err() != nil:
					case r.Status >= 200 && r.Status < 300:
						written.Add(1)
					case r.Status == http.StatusConflict && r.Code() == "user_erasing":
						refused.Add(1)
					default:
						bad.Store(r.String(), true)
					}
				}
			}()
		}
		// the erasure starts once the writers are under way
		for written.Load() < 40 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		for calls := 1; ; calls++ {
			if calls > 10000 {
				t.Fatal("the erasure never finished")
			}
			r := h.Do(t, "DELETE", "/v1/users/alice", "")
			if r.Status == http.StatusOK {
				break
			}
			if r.Status != http.StatusAccepted {
				t.Fatalf("erase: %s", r)
			}
		}
		cancel()
		wg.Wait()
		bad.Range(func(k, _ any) bool { t.Errorf("a racing write answered %s", k); return true })
		if refused.Load() == 0 {
			t.Error("no write was refused: nothing raced the erasure")
		}
		t.Logf("%d writes stored, %d refused", written.Load(), refused.Load())
		if left := naming(dump(t, srv), "", "alice", "walrus"); len(left) > 0 {
			t.Errorf("after the erasure:\n%s", strings.Join(left, "\n"))
		}
	})
}

// TestEraseFencesIndexWrites: the search index's catch-up of entries
// another program appended is a write of the user too. Half-way through an
// erasure, a relevance search of a session not erased yet must not index
// them: postings written behind the erasure's scan would outlive it.
func TestEraseFencesIndexWrites(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "true", "USER_ERASE_STEPS_PER_CALL": "1"})
		l := srv.Layout()
		const n = 2*erasure.SessionsPerStep + 5
		for i := range n {
			ok(t, h, "POST", fmt.Sprintf("/v1/users/alice/sessions/s%d/entries", i), `{"question":"walrus?","answer":"walrus"}`)
		}
		if r := h.Do(t, "DELETE", "/v1/users/alice", ""); r.Status != http.StatusAccepted {
			t.Fatalf("first step: %s, want 202", r)
		}
		// a session the first step left, and an entry Cognee appends to it
		left := ""
		for i := range n {
			if len(srv.Keys(t, l.SessionKey(redisstore.RecordFamily, "alice", fmt.Sprintf("s%d", i)))) > 0 {
				left = fmt.Sprintf("s%d", i)
				break
			}
		}
		if left == "" {
			t.Fatal("the first step erased every session")
		}
		c := srv.Client(t)
		if err := c.Do(t.Context(), c.B().Rpush().Key(l.SessionKey(redisstore.EntriesFamily, "alice", left)).
			Element(`{"question":"narwhal?","answer":"narwhal","qa_id":"cognee-1"}`).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		before := dump(t, srv)
		h.Do(t, "GET", "/v1/users/alice/sessions/"+left+"/search?rank=relevance&q=narwhal", "")
		if after := dump(t, srv); !slices.Equal(after, before) {
			t.Errorf("a search during the erasure wrote:\n%s", strings.Join(naming(after, "", "narwhal"), "\n"))
		}
	})
}

// TestEraseFencesIndexScripts: the search index's scripts that run apart
// from the write they follow (a reindex after an entry's update, a
// catch-up, a fork's message indexing) refuse while the user is erased, so
// a write that passed the fence just before it cannot index behind it.
func TestEraseFencesIndexScripts(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"USER_ERASE_STEPS_PER_CALL": "1"})
		for i := range erasure.SessionsPerStep + 5 {
			ok(t, h, "POST", fmt.Sprintf("/v1/users/alice/sessions/s%d/entries", i), `{"question":"walrus?","answer":"walrus"}`)
		}
		if r := h.Do(t, "DELETE", "/v1/users/alice", ""); r.Status != http.StatusAccepted {
			t.Fatalf("first step: %s, want 202", r)
		}
		st := sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600})
		for _, run := range []struct {
			script *lua.Script
			args   []string
		}{
			{lua.Named("session_search_entry"), []string{"qa-1", strings.Repeat("0", 40), "narwhal 1", "1"}},
			{lua.Named("session_search_catchup"), []string{"0", "0", "\n", "0"}},
			{lua.Named("messages_index"), []string{"0", "0", "0"}},
		} {
			_, err := st.Run(t.Context(), run.script, "alice", "s0", run.args...)
			var ref *redisstore.Refusal
			if !errors.As(err, &ref) || ref.Code != "user_erasing" {
				t.Errorf("%s during the erasure: %v, want the user_erasing refusal", run.script.Name, err)
			}
		}
	})
}

// TestEraseOnAnotherServer: a SCAN cursor means nothing to another
// redis-server (a replica promoted, a restart, the slot migrated): an
// erasure whose progress another server wrote scans again from the
// start, so it leaves no key behind.
func TestEraseOnAnotherServer(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"USER_ERASE_STEPS_PER_CALL": "1"})
		for i := range 2*erasure.SessionsPerStep + 5 {
			ok(t, h, "POST", fmt.Sprintf("/v1/users/alice/sessions/s%d/entries", i), `{"question":"walrus?","answer":"walrus"}`)
		}
		if r := h.Do(t, "DELETE", "/v1/users/alice", ""); r.Status != http.StatusAccepted {
			t.Fatalf("first step: %s, want 202", r)
		}
		// the progress as another server left it: its cursor (the last
		// bucket in SCAN's order here) and its run_id, fields of the
		// user's marker
		c := srv.Client(t)
		pk := srv.Layout().UserMarker("alice")
		if err := c.Do(t.Context(), c.B().Hset().Key(pk).FieldValue().
			FieldValue("fence:cursor", "18446744073709551615").FieldValue("fence:node", "another").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		for calls := 1; ; calls++ {
			if calls > 1000 {
				t.Fatal("the erasure never finished")
			}
			r := h.Do(t, "DELETE", "/v1/users/alice", "")
			if r.Status == http.StatusOK {
				break
			}
			if r.Status != http.StatusAccepted {
				t.Fatalf("erase: %s", r)
			}
		}
		if left := naming(dump(t, srv), "", "alice", "walrus"); len(left) > 0 {
			t.Errorf("after the erasure:\n%s", strings.Join(left, "\n"))
		}
	})
}
