package messages_test

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

const txPath = msgs + "/transactions"

// txAnswer is a transaction's answer.
type txAnswer struct {
	OperationID string `json:"operation_id"`
	Applied     bool   `json:"applied"`
	Messages    []msg  `json:"messages"`
}

func tx(t *testing.T, h *sidecartest.Host, body string, status int, code string) txAnswer {
	t.Helper()
	rep := h.Do(t, "POST", txPath, body)
	if rep.Status != status || (code != "" && rep.Code() != code) {
		t.Fatalf("POST transactions %.300s: got %s, want %d %s", body, rep, status, code)
	}
	var a txAnswer
	if status < 300 {
		rep.JSON(t, &a)
	}
	return a
}

// items is the raw path's items, as the adapters read them.
func items(t *testing.T, h *sidecartest.Host) []string {
	t.Helper()
	var out []string
	for _, m := range path(t, h, "compacted=false&limit=1000").Messages {
		out = append(out, string(m.Item))
	}
	return out
}

func item(text string) string {
	return fmt.Sprintf(`{"role":"assistant","format":"openai.responses","item":{"type":"message","role":"assistant","content":%q}}`, text)
}

func call(id, args string) string {
	return fmt.Sprintf(`{"role":"assistant","format":"openai.responses","item":{"type":"function_call","callId":%q,"name":"f","arguments":%q}}`, id, args)
}

// Each transaction is all or nothing, a repeat of its operation id answers
// the first result and writes nothing, the same id with another
// transaction or a stale expected suffix is refused with nothing written.
func TestTransactions(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		app := `{"operation_id":"op-1","type":"append_items","messages":[` + item("a") + `,` + call("c1", "{}") + `,` + item("b") + `]}`
		a := tx(t, h, app, 201, "")
		if !a.Applied || len(a.Messages) != 3 || a.OperationID != "op-1" {
			t.Fatalf("append: %+v", a)
		}
		// the same transaction again: the first answer, nothing written
		before := snapshot(t, srv)
		again := tx(t, h, strings.Replace(app, `"op-1","type"`, `"op-1", "type"`, 1), 200, "")
		if again.Applied || len(again.Messages) != 3 || again.Messages[0].ID != a.Messages[0].ID {
			t.Fatalf("repeat: %+v", again)
		}
		// the same id, another transaction
		tx(t, h, `{"operation_id":"op-1","type":"append_items","messages":[`+item("x")+`]}`, 409, "operation_conflict")
		if got := snapshot(t, srv); got != before {
			t.Fatalf("a repeat or a conflict wrote:\n%s\nwas\n%s", got, before)
		}

		// replace_suffix: the expected suffix compared as JSON values
		// (member order aside), a stale one refused
		stale := `{"operation_id":"op-2","type":"replace_suffix","expected_suffix":[` + item("zzz") + `],"messages":[` + item("c") + `]}`
		tx(t, h, stale, 409, "suffix_mismatch")
		if got := snapshot(t, srv); got != before {
			t.Fatalf("a stale suffix wrote:\n%s", got)
		}
		reordered := `{"item":{"content":"b","role":"assistant","type":"message"},"role":"assistant","format":"openai.responses"}`
		rs := `{"operation_id":"op-3","type":"replace_suffix","expected_suffix":[` + call("c1", "{}") + `,` + reordered + `],"messages":[` + item("c") + `,` + item("d") + `]}`
		r := tx(t, h, rs, 201, "")
		if len(r.Messages) != 2 || *r.Messages[0].ParentID != a.Messages[0].ID {
			t.Fatalf("replace_suffix: %+v", r)
		}
		want := []string{`{"type":"message","role":"assistant","content":"a"}`, `{"type":"message","role":"assistant","content":"c"}`, `{"type":"message","role":"assistant","content":"d"}`}
		if got := items(t, h); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after replace_suffix: %v", got)
		}
		// its repeat, though the suffix it expected is gone: the first answer
		if again := tx(t, h, rs, 200, ""); again.Applied || len(again.Messages) != 2 {
			t.Fatalf("repeat of replace_suffix: %+v", again)
		}

		// replace_function_call: the first call replaced in place, later
		// ones of the same call removed, the rest kept as stored
		tx(t, h, `{"operation_id":"op-4","type":"append_items","messages":[`+call("c2", "{}")+`,`+item("e")+`,`+call("c2", "{}")+`,`+item("f")+`]}`, 201, "")
		rf := tx(t, h, `{"operation_id":"op-5","type":"replace_function_call","call_id":"c2","message":`+call("c2", `{"x":1}`)+`}`, 201, "")
		if len(rf.Messages) != 3 {
			t.Fatalf("replace_function_call wrote %d messages", len(rf.Messages))
		}
		want = append(want, `{"type":"function_call","callId":"c2","name":"f","arguments":"{\"x\":1}"}`,
			`{"type":"message","role":"assistant","content":"e"}`, `{"type":"message","role":"assistant","content":"f"}`)
		if got := items(t, h); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after replace_function_call:\n%v\nwant\n%v", got, want)
		}
		tx(t, h, `{"operation_id":"op-6","type":"replace_function_call","call_id":"nope","message":`+call("nope", `{}`)+`}`, 404, "not_found")

		// replace_history: the whole history at once
		rh := tx(t, h, `{"operation_id":"op-7","type":"replace_history","messages":[`+item("summary")+`,`+item("g")+`]}`, 201, "")
		if len(rh.Messages) != 2 || rh.Messages[0].ParentID != nil {
			t.Fatalf("replace_history: %+v", rh)
		}
		if p := path(t, h, "compacted=false"); p.Total != 2 {
			t.Fatalf("after replace_history: %d messages", p.Total)
		}

		// bad input: 400, nothing written
		before = snapshot(t, srv)
		for _, body := range []string{
			`{"type":"append_items","messages":[` + item("a") + `]}`,
			`{"operation_id":"","type":"append_items","messages":[` + item("a") + `]}`,
			`{"operation_id":"x","type":"nope"}`,
			`{"operation_id":"x","type":"append_items","messages":[]}`,
			`{"operation_id":"x","type":"append_items","messages":[` + item("a") + `],"call_id":"c"}`,
			`{"operation_id":"x","type":"replace_suffix","messages":[]}`,
			`{"operation_id":"x","type":"replace_function_call","call_id":"c","message":` + item("a") + `}`,
			`{"operation_id":"x","type":"replace_function_call","call_id":"c2","message":{"role":"Bad","format":"openai.responses","item":{"type":"function_call","callId":"c2"}}}`,
			`{"operation_id":"x","type":"append_items","messages":[{"role":"user","content":"a","parent_id":null}]}`,
		} {
			if rep := h.Do(t, "POST", txPath, body); rep.Status != 400 {
				t.Errorf("%s: got %s, want 400", body, rep)
			}
		}
		if got := snapshot(t, srv); got != before {
			t.Fatalf("bad input wrote:\n%s", got)
		}
	})
}

// Concurrent replace_suffix transactions expecting the same suffix: one
// applies, every other is refused, and readers never see a half-applied
// history (the path is always one of the two states).
func TestTransactionsConcurrent(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	tx(t, h, `{"operation_id":"seed","type":"append_items","messages":[`+item("a")+`,`+item("b")+`,`+item("c")+`]}`, 201, "")
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"operation_id":"w%d","type":"replace_suffix","expected_suffix":[%s,%s],"messages":[%s,%s,%s]}`,
				i, item("b"), item("c"), item(fmt.Sprint("x", i)), item(fmt.Sprint("y", i)), item(fmt.Sprint("z", i)))
			statuses[i] = h.Do(t, "POST", txPath, body).Status
		}()
	}
	stop := make(chan struct{})
	var readErr error
	var rg sync.WaitGroup
	rg.Add(1)
	go func() {
		defer rg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := len(items(t, h))
			if n != 3 && n != 4 {
				readErr = fmt.Errorf("a reader saw %d items", n)
			}
		}
	}()
	wg.Wait()
	close(stop)
	rg.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	applied := 0
	for _, s := range statuses {
		switch s {
		case 201:
			applied++
		case 409:
		default:
			t.Fatalf("statuses %v", statuses)
		}
	}
	if applied != 1 || len(items(t, h)) != 4 {
		t.Fatalf("statuses %v, items %v", statuses, items(t, h))
	}
}

// A transaction's Redis work is bounded by what it removes and writes, not
// by the session: on a 2 000-message path a replace_suffix of 3 reads
// O(3 + log n) nodes (the tail's page and the script's checks), and
// replace_history removes every message with O(1) commands.
func TestTransactionsBoundedWork(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	c := srv.Client(t)
	const n = 2000
	chain(t, h, "s1", n)
	logn := bits.Len(uint(n))
	resetStats(t, c)
	tx(t, h, `{"operation_id":"b1","type":"replace_suffix","expected_suffix":[`+
		`{"id":"c1997","role":"user","content":"message 1997"},{"role":"user","content":"message 1998"},{"role":"user","content":"message 1999"}],`+
		`"messages":[`+item("x")+`]}`, 201, "")
	if got, most := calls(t, c, "hget"), 3*3+4*logn+16; got > most {
		t.Errorf("replace_suffix of 3 on %d messages: %d HGETs, want at most %d", n, got, most)
	}
	for _, cmd := range []string{"hgetall", "hvals", "hkeys", "zrange", "lrange"} {
		if got := calls(t, c, cmd); got > 0 {
			t.Errorf("replace_suffix: %d %s, want none", got, cmd)
		}
	}
	resetStats(t, c)
	tx(t, h, `{"operation_id":"b2","type":"replace_history","messages":[`+item("summary")+`]}`, 201, "")
	// (9: constant reads, finish_write's ADK lookup among them)
	if got := calls(t, c, "hdel") + calls(t, c, "zrem") + calls(t, c, "hget"); got > 9 {
		t.Errorf("replace_history of %d messages: %d per-message commands, want O(1)", n, got)
	}
	if p := path(t, h, "compacted=false"); p.Total != 1 {
		t.Fatalf("after replace_history: %d messages", p.Total)
	}
}

// A transaction emits its events in its script, on every backend: the
// removed messages in one message_deleted naming the operation, then one
// message_appended for the messages written; a repeat, a conflict or a stale
// suffix emits nothing.
func TestTransactionsEmitEvents(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_EVENTS": "always"}) // reads what every write recorded
		l, c := srv.Layout(), srv.Client(t)
		app := `{"operation_id":"e1","type":"append_items","messages":[{"id":"a","role":"user","content":"q"},{"id":"b","role":"assistant","content":"x"}]}`
		tx(t, h, app, 201, "")
		tx(t, h, app, 200, "")
		tx(t, h, `{"operation_id":"e1","type":"append_items","messages":[{"role":"user","content":"other"}]}`, 409, "operation_conflict")
		tx(t, h, `{"operation_id":"e2","type":"replace_suffix","expected_suffix":[{"role":"assistant","content":"y"}],"messages":[]}`, 409, "suffix_mismatch")
		tx(t, h, `{"operation_id":"e3","type":"replace_suffix","expected_suffix":[{"role":"assistant","content":"x"}],"messages":[{"id":"c","role":"assistant","content":"z"}]}`, 201, "")
		tx(t, h, `{"operation_id":"e4","type":"replace_history","messages":[{"id":"d","role":"system","content":"summary"}]}`, 201, "")
		got := redisstoretest.StreamEvents(t, c, l.SessionEvents("alice", "s1"))
		want := []string{"message_appended", "message_deleted", "message_appended", "message_deleted", "message_appended"}
		if g := types(got); !slices.Equal(g, want) {
			t.Fatalf("events:\n got %v\nwant %v", g, want)
		}
		if d := got[0].Data; d["count"] != float64(2) || d["first_id"] != "a" || d["last_id"] != "b" {
			t.Errorf("append_items's message_appended: %v, want the range a..b", d)
		}
		got = slices.Insert(got, 0, got[0]) // the indexes below count one event per message
		if d := got[2].Data; d["id"] != "b" || d["operation_id"] != "e3" || len(d["ids"].([]any)) != 1 {
			t.Errorf("replace_suffix's message_deleted: %v", d)
		}
		if d := got[3].Data; d["id"] != "c" || d["parent_id"] != "a" {
			t.Errorf("replace_suffix's message_appended: %v", d)
		}
		if d := got[4].Data; d["cleared"] != true || d["count"] != float64(2) || d["operation_id"] != "e4" {
			t.Errorf("replace_history's message_deleted: %v", d)
		}
		if p := path(t, h, "compacted=false"); p.Total != 1 || p.Messages[0].ID != "d" {
			t.Errorf("after replace_history: %+v", p)
		}
	})
}

// The refusals that depend on what the session holds write nothing: a
// suffix with another branch under it, a session that would pass
// SESSION_MAX_MESSAGES, a new id held by a message the transaction keeps.
func TestTransactionsRefusals(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_MAX_MESSAGES": "5"})
		tx(t, h, `{"operation_id":"r1","type":"append_items","messages":[{"id":"a","role":"user","content":"q"},{"id":"b","role":"assistant","content":"x"}]}`, 201, "")
		post(t, h, `{"id":"b2","role":"assistant","content":"y","parent_id":"a"}`, 201) // a branch under a
		post(t, h, `{"id":"c","role":"user","content":"z","parent_id":"b"}`, 201)       // the latest leaf: c, under b
		before := snapshot(t, srv)
		// a, b and c replaced: a has another branch (b2) under it
		tx(t, h, `{"operation_id":"r2","type":"replace_suffix","expected_suffix":[{"role":"user","content":"q"},{"role":"assistant","content":"x"},{"role":"user","content":"z"}],"messages":[]}`, 409, "has_children")
		if got := snapshot(t, srv); got != before {
			t.Fatalf("has_children wrote:\n%s\nwas\n%s", got, before)
		}
		tx(t, h, `{"operation_id":"r3","type":"append_items","messages":[{"role":"user","content":"1"}]}`, 201, "")
		before = snapshot(t, srv)
		tx(t, h, `{"operation_id":"r4","type":"append_items","messages":[{"role":"user","content":"2"}]}`, 409, "session_full")
		tx(t, h, `{"operation_id":"r5","type":"replace_suffix","expected_suffix":[],"messages":[{"id":"a","role":"user","content":"q"}]}`, 409, "id_conflict")
		if got := snapshot(t, srv); got != before {
			t.Fatalf("refusals wrote:\n%s\nwas\n%s", got, before)
		}
		// a replacement within the cap: two out, one in
		tx(t, h, `{"operation_id":"r6","type":"replace_suffix","expected_suffix":[{"role":"user","content":"z"},{"role":"user","content":"1"}],"messages":[{"role":"user","content":"w"}]}`, 201, "")
		if p := path(t, h, "compacted=false"); p.Total != 3 {
			t.Fatalf("after r6: %d messages on the path", p.Total)
		}
	})
}

// Several replace_function_calls in one transaction apply in order, all or
// nothing, as the SDK's applyHistoryMutations does with its list.
func TestTransactionsReplacements(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		tx(t, h, `{"operation_id":"p1","type":"append_items","messages":[`+item("a")+`,`+call("c1", "{}")+`,`+item("b")+`,`+call("c2", "{}")+`,`+call("c1", "{}")+`,`+item("c")+`]}`, 201, "")
		r := tx(t, h, `{"operation_id":"p2","type":"replace_function_call","replacements":[`+
			`{"call_id":"c2","message":`+call("c2", `{"v":2}`)+`},{"call_id":"c1","message":`+call("c1", `{"v":1}`)+`},`+
			`{"call_id":"c9","message":`+call("c9", `{}`)+`}]}`, 201, "")
		if len(r.Messages) != 4 { // c1 (new), b, c2 (new), c: from c1 on
			t.Fatalf("wrote %d messages, want 4", len(r.Messages))
		}
		want := []string{`{"type":"message","role":"assistant","content":"a"}`,
			`{"type":"function_call","callId":"c1","name":"f","arguments":"{\"v\":1}"}`,
			`{"type":"message","role":"assistant","content":"b"}`,
			`{"type":"function_call","callId":"c2","name":"f","arguments":"{\"v\":2}"}`,
			`{"type":"message","role":"assistant","content":"c"}`}
		if got := items(t, h); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after the replacements:\n%v\nwant\n%v", got, want)
		}
		for _, body := range []string{
			`{"operation_id":"p3","type":"replace_function_call","replacements":[]}`,
			`{"operation_id":"p3","type":"replace_function_call","replacements":[{"call_id":"c1"}]}`,
			`{"operation_id":"p3","type":"replace_function_call","call_id":"c1","replacements":[{"call_id":"c1","message":` + call("c1", "{}") + `}]}`,
		} {
			if rep := h.Do(t, "POST", txPath, body); rep.Status != 400 {
				t.Errorf("%s: got %s, want 400", body, rep)
			}
		}
		tx(t, h, `{"operation_id":"p4","type":"replace_function_call","replacements":[{"call_id":"c8","message":`+call("c8", "{}")+`}]}`, 404, "not_found")
	})
}

// A message replace_function_call keeps is stored again under its new
// parent as valid JSON with its own fields, whatever they hold: a metadata
// or item member named parent_id near the message's end is its own, not
// the one the sidecar appends.
func TestTransactionsKeptMessageFields(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		kept := `{"id":"k","role":"tool","content":"out","metadata":{"a":"b","parent_id":"zz"}}`
		tx(t, h, `{"operation_id":"m1","type":"append_items","messages":[{"id":"q","role":"user","content":"q"},`+call("c1", "{}")+`,`+kept+`]}`, 201, "")
		tx(t, h, `{"operation_id":"m2","type":"replace_function_call","call_id":"c1","message":`+call("c1", `{"x":1}`)+`}`, 201, "")
		c := srv.Client(t)
		raw, err := c.Do(t.Context(), c.B().Hget().Key(messages.SessionKeys(srv.Layout(), "alice", "s1").Messages).Field("k").Build()).ToString()
		if err != nil || !json.Valid([]byte(raw)) {
			t.Fatalf("kept message stored as %q (%v): not JSON", raw, err)
		}
		p := path(t, h, "compacted=false")
		if len(p.Messages) != 3 {
			t.Fatalf("path: %+v", p)
		}
		k := p.Messages[2]
		if k.ID != "k" || string(k.Metadata) != `{"a":"b","parent_id":"zz"}` || k.ParentID == nil || *k.ParentID != p.Messages[1].ID || k.Tokens == 0 {
			t.Fatalf("kept message: %+v (metadata %s)", k, k.Metadata)
		}
	})
}

// A replacement that names another message of the rewritten segment (kept
// as stored) would store two messages of one id, the second its own
// parent: refused, nothing written.
func TestTransactionsReplacementIDHeld(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		tx(t, h, `{"operation_id":"d1","type":"append_items","messages":[{"id":"q","role":"user","content":"q"},`+
			`{"id":"a","role":"assistant","format":"openai.responses","item":{"type":"function_call","callId":"c1","name":"f","arguments":"{}"}},`+
			`{"id":"b","role":"tool","content":"out"}]}`, 201, "")
		before := snapshot(t, srv)
		tx(t, h, `{"operation_id":"d2","type":"replace_function_call","call_id":"c1","message":`+
			`{"id":"b","role":"assistant","format":"openai.responses","item":{"type":"function_call","callId":"c1","name":"f","arguments":"{\"x\":1}"}}}`, 409, "id_conflict")
		if got := snapshot(t, srv); got != before {
			t.Fatalf("the refusal wrote:\n%s\nwas\n%s", got, before)
		}
		if got := ids(path(t, h, "compacted=false")); got != "q,a,b" {
			t.Fatalf("path %s", got)
		}
	})
}

// A transaction that replaces every message of the session empties its
// message keys and makes them anew: they get the session's TTL at once,
// though the session was slid a moment ago.
func TestTransactionsRemadeKeysKeepTTL(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		tx(t, h, `{"operation_id":"t1","type":"append_items","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"x"}]}`, 201, "")
		tx(t, h, `{"operation_id":"t2","type":"replace_suffix","expected_suffix":[{"role":"user","content":"q"},{"role":"assistant","content":"x"}],`+
			`"messages":[{"role":"user","content":"summary"}]}`, 201, "")
		k := messages.SessionKeys(srv.Layout(), "alice", "s1")
		c := srv.Client(t)
		for _, key := range []string{k.Messages, k.Tree, k.Children, k.Order} {
			if ttl, err := c.Do(t.Context(), c.B().Ttl().Key(key).Build()).AsInt64(); err != nil || ttl <= 0 {
				t.Errorf("%s: TTL %d (%v), want the session's", key, ttl, err)
			}
		}
	})
}

// Under SEARCH_INDEX=on-demand (the default) a transaction of a user who
// never searched writes no search key, as an append does (a document
// written regardless would make the user's index exist with none of the
// earlier messages in it, so the first search would find only these); the
// user's first search then finds them.
func TestTransactionsOnDemandIndex(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		if r := h.Do(t, "POST", msgs, `{"id":"m0","role":"user","content":"the walrus sleeps"}`); r.Status != 201 {
			t.Fatalf("append: %s", r)
		}
		tx(t, h, `{"operation_id":"o1","type":"append_items","messages":[{"id":"a","role":"user","content":"narwhal tusks"}]}`, 201, "")
		keys, err := c.Do(t.Context(), c.B().Keys().Pattern("agent_search*").Build()).AsStrSlice()
		if err != nil || len(keys) != 0 {
			t.Fatalf("search keys of a user who never searched: %v %v", keys, err)
		}
		for _, q := range []string{"walrus", "narwhal"} {
			r := h.Do(t, "GET", "/v1/users/alice/search?q="+q, "")
			if r.Status != 200 || strings.Count(string(r.Body), `"kind":"message"`) != 1 {
				t.Errorf("first search for %s: %s, want its one message", q, r)
			}
		}
	})
}

// replace_history with expected_leaf (the id of the latest message the
// caller read, "" for none) is refused with nothing written when another
// message became the latest since: a compaction never erases another
// pod's turn. A repeat still answers the first result.
func TestReplaceHistoryExpectedLeaf(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		tx(t, h, `{"operation_id":"l1","type":"append_items","messages":[{"id":"a","role":"user","content":"q"}]}`, 201, "")
		// another pod's turn after the compaction read "a"
		tx(t, h, `{"operation_id":"l2","type":"append_items","messages":[{"id":"b","role":"assistant","content":"x"}]}`, 201, "")
		before := snapshot(t, srv)
		for _, leaf := range []string{`"a"`, `""`, `"nope"`} {
			tx(t, h, `{"operation_id":"l3","type":"replace_history","expected_leaf":`+leaf+`,"messages":[{"role":"system","content":"summary"}]}`, 409, "suffix_mismatch")
		}
		if got := snapshot(t, srv); got != before {
			t.Fatalf("a refused replace_history wrote:\n%s\nwas\n%s", got, before)
		}
		for _, body := range []string{
			`{"operation_id":"l3","type":"replace_history","expected_leaf":"bad/id","messages":[]}`,
			`{"operation_id":"l3","type":"append_items","expected_leaf":"b","messages":[{"role":"user","content":"q"}]}`,
		} {
			tx(t, h, body, 400, "invalid_field")
		}
		ok := `{"operation_id":"l4","type":"replace_history","expected_leaf":"b","messages":[{"id":"s","role":"system","content":"summary"}]}`
		tx(t, h, ok, 201, "")
		if got := ids(path(t, h, "compacted=false")); got != "s" {
			t.Fatalf("after replace_history: %s", got)
		}
		// a repeat answers the first result though the leaf is now "s"
		if again := tx(t, h, ok, 200, ""); again.Applied || len(again.Messages) != 1 {
			t.Fatalf("repeat: %+v", again)
		}
		// "" expects an empty history
		tx(t, h, `{"operation_id":"l5","type":"replace_history","expected_leaf":"","messages":[]}`, 409, "suffix_mismatch")
		tx(t, h, `{"operation_id":"l6","type":"replace_history","expected_leaf":"s","messages":[]}`, 201, "")
		tx(t, h, `{"operation_id":"l7","type":"replace_history","expected_leaf":"","messages":[{"id":"t","role":"system","content":"s2"}]}`, 201, "")
	})
}

// A repeated transaction, or a repeated append by Idempotency-Key, answers
// the first time's messages within the answer's byte cap (counted before
// each is read, at least one), with Sidecar-Truncated when the cap left
// some out: a repeat is not one reply of a thousand 1 MiB messages.
func TestRepeatWithinTheAnswerCap(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SIDECAR_MAX_ANSWER_BYTES": "70000"})
		big := strings.Repeat("x", 30000)
		var list []string
		for i := range 5 {
			list = append(list, fmt.Sprintf(`{"id":"m%d","role":"assistant","content":%q}`, i, big))
		}
		check := func(rep sidecartest.Reply, status, want int, cut bool) {
			t.Helper()
			var a struct{ Messages []msg }
			if rep.Status != status {
				t.Fatalf("got %s, want %d", rep, status)
			}
			rep.JSON(t, &a)
			if len(a.Messages) != want || (rep.Header.Get("Sidecar-Truncated") == "true") != cut {
				t.Fatalf("%d messages, Sidecar-Truncated %q; want %d, cut %v", len(a.Messages), rep.Header.Get("Sidecar-Truncated"), want, cut)
			}
			for i, m := range a.Messages {
				if m.ID != fmt.Sprintf("m%d", i) && m.ID != fmt.Sprintf("k%d", i) {
					t.Fatalf("message %d is %s", i, m.ID)
				}
			}
		}
		body := `{"operation_id":"big","type":"append_items","messages":[` + strings.Join(list, ",") + `]}`
		check(h.Do(t, "POST", txPath, body), 201, 5, false)
		check(h.Do(t, "POST", txPath, body), 200, 2, true)

		batch := `{"messages":[` + strings.ReplaceAll(strings.Join(list, ","), `"id":"m`, `"id":"k`) + `]}`
		check(h.Do(t, "POST", msgs, batch, "Idempotency-Key", "k"), 201, 5, false)
		before := snapshot(t, srv)
		check(h.Do(t, "POST", msgs, batch, "Idempotency-Key", "k"), 200, 2, true)
		if got := snapshot(t, srv); got != before {
			t.Fatalf("a repeat wrote:\n%s\nwas\n%s", got, before)
		}
	})
}

// A replace_function_call retried after its call left the latest path
// answers the first result (applied false), not 404: the operation id is
// checked before the call is looked up.
func TestReplaceFunctionCallRetryAfterTheCallLeft(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		tx(t, h, `{"operation_id":"f1","type":"append_items","messages":[`+item("q")+`,`+call("c1", "{}")+`]}`, 201, "")
		rf := `{"operation_id":"f2","type":"replace_function_call","call_id":"c1","message":` + call("c1", `{"x":1}`) + `}`
		tx(t, h, rf, 201, "")
		tx(t, h, `{"operation_id":"f3","type":"replace_suffix","expected_suffix":[`+call("c1", `{"x":1}`)+`],"messages":[]}`, 201, "")
		before := snapshot(t, srv)
		if again := tx(t, h, rf, 200, ""); again.Applied {
			t.Fatalf("retry: %+v", again)
		}
		if got := snapshot(t, srv); got != before {
			t.Fatalf("the retry wrote:\n%s\nwas\n%s", got, before)
		}
		// another operation with no such call is still 404
		tx(t, h, `{"operation_id":"f4","type":"replace_function_call","call_id":"c1","message":`+call("c1", `{"x":2}`)+`}`, 404, "not_found")
	})
}

// A compaction racing another pod's append: replace_history with the leaf
// it read either applies (and the append it did not read comes after it)
// or is refused; an appended message is never erased unread.
func TestReplaceHistoryExpectedLeafConcurrent(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		tx(t, h, `{"operation_id":"seed","type":"append_items","messages":[{"id":"p","role":"user","content":"q"}]}`, 201, "")
		for i := range 20 {
			var wg sync.WaitGroup
			var read string
			status := 0
			wg.Add(2)
			go func() {
				defer wg.Done()
				h.Do(t, "POST", msgs, fmt.Sprintf(`{"id":"p%d","role":"user","content":"q"}`, i))
			}()
			go func() {
				defer wg.Done()
				var p struct{ Messages []msg }
				h.Do(t, "GET", msgs+"?compacted=false&order=desc&limit=1", "").JSON(t, &p)
				if len(p.Messages) > 0 {
					read = p.Messages[0].ID
				}
				status = h.Do(t, "POST", txPath, fmt.Sprintf(
					`{"operation_id":"c%d","type":"replace_history","expected_leaf":%q,"messages":[{"id":"s%d","role":"system","content":"summary"}]}`,
					i, read, i)).Status
			}()
			wg.Wait()
			got := ids(path(t, h, "compacted=false&limit=1000"))
			has := slices.Contains(strings.Split(got, ","), fmt.Sprint("p", i))
			switch {
			case status == 409 && has:
			case status == 201 && (has || read == fmt.Sprint("p", i)):
			default:
				t.Fatalf("round %d: replace_history %d after reading %q, path %s", i, status, read, got)
			}
		}
	})
}
