package sessions_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/client"
	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// A body that names a key twice (at any depth) is a 400 naming it, and the
// stored bytes do not change.
func TestDuplicateKeysAreRefused(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		h.Do(t, "POST", base+"/context", `{"id":"c1","x":"0"}`)
		entries, contexts := lrange(t, c, keys.Entries), lrange(t, c, keys.Context)
		for _, tc := range []struct{ method, path, body, field string }{
			{"PATCH", base + "/context/c1", `{"x":"a","x":"b"}`, "x"},
			{"PATCH", base + "/entries/q1", `{"memify_metadata":{"k":true,"k":false}}`, "memify_metadata.k"},
			{"PATCH", base + "/entries/q1", `{"answer":"a","answer":"b"}`, "answer"},
			{"PUT", base + "/entries/q1/feedback", `{"feedback_score":1,"feedback_score":2}`, "feedback_score"},
			{"POST", base + "/entries", `{"question":"q","answer":"a","qa_id":"q2","qa_id":"q3"}`, "qa_id"},
			{"POST", base + "/context", `{"id":"c2","meta":{"a":1,"a":2}}`, "meta.a"},
			{"POST", base + "/traces", `{"origin_function":"f","status":"ok","method_params":{"p":1,"p":2}}`, "method_params.p"},
		} {
			r := h.Do(t, tc.method, tc.path, tc.body)
			if r.Status != 400 || r.Code() != "duplicate_field" || !json.Valid([]byte(r.Body)) || !strings.Contains(r.Body, `\"`+tc.field+`\"`) {
				t.Errorf("%s %s %s: %d %s, want 400 duplicate_field naming %s", tc.method, tc.path, tc.body, r.Status, r.Body, tc.field)
			}
		}
		if got := lrange(t, c, keys.Entries); !slices.Equal(got, entries) {
			t.Fatalf("entries changed by refused calls: %q", got)
		}
		if got := lrange(t, c, keys.Context); !slices.Equal(got, contexts) {
			t.Fatalf("context changed by refused calls: %q", got)
		}
		if n := len(lrange(t, c, keys.Traces)); n != 0 {
			t.Fatalf("%d traces stored by a refused call", n)
		}
	})
}

// The scripts set a field named twice once, to its last value, whoever
// calls them: the stored entry stays one valid JSON object.
func TestScriptsSetARepeatedFieldOnce(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1","memify_metadata":{"k":true}}`)
		h.Do(t, "POST", base+"/context", `{"id":"c1","x":"0"}`)
		before := lrange(t, c, keys.Entries)[0]
		st := sessions.NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		got, err := st.UpdateEntry(t.Context(), "u1", "s1", "q1",
			[][2]string{{"answer", `"b"`}, {"answer", `"c"`}, {"feedback_text", `"t"`}, {"feedback_text", `null`}},
			[]byte(`{"k": true, "k": false, "n": true, "n": false}`))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"time": ` + field(t, before, "time") + `, "question": "q", "context": "", "answer": "c", "qa_id": "q1", "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": {"k": false, "n": false}, "used_session_context_ids": null}`
		if string(got) != want || lrange(t, c, keys.Entries)[0] != want {
			t.Fatalf("stored\n %s\nwant\n %s", lrange(t, c, keys.Entries)[0], want)
		}
		// Into a null memify_metadata too: first place, last value, as
		// Python's json.loads reads a repeated key.
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q2"}`)
		got, err = st.UpdateEntry(t.Context(), "u1", "s1", "q2", nil, []byte(`{"a": true, "b": true, "a": false}`))
		if err != nil || !strings.Contains(string(got), `"memify_metadata": {"a": false, "b": true}`) || lrange(t, c, keys.Entries)[1] != string(got) {
			t.Fatalf("memify merged into null: %s (%v)", got, err)
		}
		ctx, err := st.UpdateContext(t.Context(), "u1", "s1", "c1", []byte(`{"x": "a", "x": "b", "y": 1, "y": 2}`))
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"id": "c1", "x": "b", "y": 2}`; string(ctx) != want || lrange(t, c, keys.Context)[0] != want {
			t.Fatalf("context stored %q, want %s", lrange(t, c, keys.Context), want)
		}
	})
}

func field(t *testing.T, entry, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(entry), &m); err != nil {
		t.Fatal(err)
	}
	return string(m[name])
}

// A trace step is stored as Cognee's model stores it: text cut to 1000
// characters ("..." at the end), lists and objects to 20 items, at every
// depth; the answer is the stored bytes.
func TestTracesAreStoredWithCogneesLimits(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		at := strings.Repeat("a", 1000)
		over := strings.Repeat("b", 1001)
		items := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("1, ", n), ", ") + "]" }
		body := `{"trace_id":"t1","origin_function":"` + over + `","status":"ok","memory_query":"` + at + `",` +
			`"method_params":{"list":` + strings.ReplaceAll(items(21), " ", "") + `,"deep":{"s":"` + over + `"}},` +
			`"method_return_value":` + strings.ReplaceAll(items(20), " ", "") + `}`
		r := h.Do(t, "POST", base+"/traces", body)
		cut := strings.Repeat("b", 997) + "..."
		want := `{"trace_id": "t1", "origin_function": "` + cut + `", "status": "ok", "memory_query": "` + at +
			`", "memory_context": "", "method_params": {"list": ` + items(20) + `, "deep": {"s": "` + cut + `"}}, "method_return_value": ` + items(20) +
			`, "error_message": "", "session_feedback": ""}`
		if r.Status != 201 || strings.TrimSpace(r.Body) != want {
			t.Fatalf("trace: %d\n %.300s\nwant\n %.300s", r.Status, r.Body, want)
		}
		if got := lrange(t, c, keys.Traces); len(got) != 1 || got[0] != want {
			t.Fatalf("Redis holds %q", got)
		}
		// Numbers as Cognee's json.dumps writes what json.loads read; one too
		// large for a float (Infinity to Python) is refused, naming it.
		r = h.Do(t, "POST", base+"/traces", `{"trace_id":"t2","origin_function":"f","status":"ok","method_return_value":1e400}`)
		if r.Status != 400 || r.Code() != "invalid_field" || !strings.Contains(r.Body, "method_return_value") || len(lrange(t, c, keys.Traces)) != 1 {
			t.Fatalf("trace with 1e400: %s, Redis %q", r, lrange(t, c, keys.Traces))
		}
		r = h.Do(t, "POST", base+"/traces", `{"trace_id":"t2","origin_function":"f","status":"ok","method_params":{"a":1.50,"b":1e5,"c":-0},"method_return_value":1e300}`)
		stored := `{"trace_id": "t2", "origin_function": "f", "status": "ok", "memory_query": "", "memory_context": "", "method_params": {"a": 1.5, "b": 100000.0, "c": 0}, "method_return_value": 1e+300, "error_message": "", "session_feedback": ""}`
		if r.Status != 201 || strings.TrimSpace(r.Body) != stored || lrange(t, c, keys.Traces)[1] != stored {
			t.Fatalf("trace with numbers: %d %s, Redis %q", r.Status, r.Body, lrange(t, c, keys.Traces))
		}
	})
}

// SESSION_MAX_ENTRIES trims in batches: a list is cut back to N newest only
// once it passes 1.25 N, so positions shift once per N/4 appends; the qa_id
// index keeps up with every cut.
func TestMaxEntriesTrimsInBatches(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, envconf.Env{"SESSION_MAX_ENTRIES": "4"})
		c := srv.Client(t)
		ids := func(list []string) string {
			var out []string
			for _, e := range list {
				var v struct {
					QAID string `json:"qa_id"`
					ID   string `json:"trace_id"`
				}
				_ = json.Unmarshal([]byte(e), &v)
				out = append(out, v.QAID+v.ID)
			}
			return strings.Join(out, ",")
		}
		wantAfter := map[int]string{
			5: "e0,e1,e2,e3,e4", // 5 = 1.25 N: not past it
			6: "e2,e3,e4,e5",    // past it: back to N
			7: "e2,e3,e4,e5,e6", // growing again
			8: "e4,e5,e6,e7",    // the next cut
			9: "e4,e5,e6,e7,e8", // ...
		}
		for i := range 9 {
			h.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"question":"q","answer":"a","qa_id":"e%d"}`, i))
			h.Do(t, "POST", base+"/traces", fmt.Sprintf(`{"origin_function":"f","status":"ok","trace_id":"e%d"}`, i))
			if want, ok := wantAfter[i+1]; ok {
				if got := ids(lrange(t, c, keys.Entries)); got != want {
					t.Fatalf("after %d appends the list holds %s, want %s", i+1, got, want)
				}
				if got := ids(lrange(t, c, keys.Traces)); got != want {
					t.Fatalf("after %d appends the traces are %s, want %s", i+1, got, want)
				}
			}
		}
		// The index knows exactly the kept entries, and finds each.
		if n, _ := c.Do(t.Context(), c.B().Hlen().Key(keys.Index).Build()).AsInt64(); n != 5+4 {
			t.Fatalf("index holds %d fields, want 5 ids + #head, #len, #first, #last", n)
		}
		for i := range 9 {
			want := 404
			if i >= 4 {
				want = 200
			}
			if r := h.Do(t, "PUT", base+fmt.Sprintf("/entries/e%d/feedback", i), `{"feedback_score":3}`); r.Status != want ||
				(want == 200 && !strings.Contains(r.Body, fmt.Sprintf(`"qa_id": "e%d"`, i))) {
				t.Fatalf("feedback on e%d: %d %s, want %d", i, r.Status, r.Body, want)
			}
		}
	})
}

// A session only Cognee wrote starts at its first entry's time: on reads,
// when it is ended through the sidecar, and when a sidecar write makes its
// record.
func TestCogneeOnlySessionStartsAtItsFirstEntry(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory)
		c := srv.Client(t)
		layout := srv.Layout()
		old := fixture(t, "cognee_qa_entry_old.json") // "time": "2026-01-02T03:04:05" (naive: UTC)
		oldAt := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		offset := strings.Replace(old, "2026-01-02T03:04:05", "2026-03-04T05:06:07.25+02:00", 1)
		offsetAt := time.Date(2026, 3, 4, 3, 6, 7, 250000000, time.UTC)
		recent, _ := cognee.NewQAEntry(cognee.QAFields{Question: json.RawMessage(`"q"`), Answer: json.RawMessage(`"a"`)}, "c2", time.Now())
		rpush(t, c, layout.Session("u1", "ended").Entries, old, string(recent))
		rpush(t, c, layout.Session("u1", "fed").Entries, offset, string(recent))

		startedAt := func(s string) (time.Time, string) {
			t.Helper()
			var rec client.SessionRecord
			r := h.Do(t, "GET", "/v1/users/u1/sessions/"+s, "")
			r.JSON(t, &rec)
			if r.Status != 200 || rec.StartedAt == nil {
				t.Fatalf("record of %s: %d %s", s, r.Status, r.Body)
			}
			stored, _ := c.Do(t.Context(), c.B().Hget().Key(layout.Session("u1", s).Record).Field("started_at").Build()).ToString()
			return *rec.StartedAt, stored
		}
		if got, _ := startedAt("ended"); !got.Equal(oldAt) {
			t.Fatalf("read of a Cognee-only session: started_at %v, want %v", got, oldAt)
		}
		if r := h.Do(t, "POST", "/v1/users/u1/sessions/ended/complete", ""); r.Status != 200 {
			t.Fatalf("complete: %d %s", r.Status, r.Body)
		}
		if got, stored := startedAt("ended"); !got.Equal(oldAt) || stored != fmt.Sprint(oldAt.UnixMicro()) {
			t.Fatalf("ended Cognee-only session: started_at %v (stored %q), want %v", got, stored, oldAt)
		}
		if r := h.Do(t, "PUT", "/v1/users/u1/sessions/fed/entries/c2/feedback", `{"feedback_score":4}`); r.Status != 200 {
			t.Fatalf("feedback: %d %s", r.Status, r.Body)
		}
		if got, stored := startedAt("fed"); !got.Equal(offsetAt) || stored != fmt.Sprint(offsetAt.UnixMicro()) {
			t.Fatalf("record made by feedback: started_at %v (stored %q), want %v", got, stored, offsetAt)
		}
		// A session the sidecar starts starts now, whatever its entry says.
		before := time.Now().Add(-time.Second)
		h.Do(t, "POST", "/v1/users/u1/sessions/own/entries", `{"question":"q","answer":"a"}`)
		if got, _ := startedAt("own"); got.Before(before) || got.After(time.Now().Add(time.Second)) {
			t.Fatalf("own session started_at %v", got)
		}
	})
}

// A key of the session that another program set to a value of the wrong
// type makes a write a 409 key_wrong_type naming it, and nothing is
// written: no half-done write, no 500. A key is checked when the write
// reads it (the record, the lists and their indexes), or when the session
// first has it or the write's bookkeeping writes it (the traces list here,
// the completed set of a session that ends); the lifecycle indexes and the
// event stream are checked when the session starts
// (TestWrongTypedKeysFirstMetAreRefused).
func TestWrongTypeKeysAreRefusedBeforeAnyWrite(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory, ttl.Factory)
		c := srv.Client(t)
		// every key of the session, its event stream (a refused write emits
		// nothing) and more: values and TTLs
		snapshot := func(k redisstore.SessionKeys, events string, more ...string) []string {
			return redisstoretest.Snapshot(t, c, append(append(k.List(), events), more...)...)
		}
		for n, tc := range []struct {
			key  func(k redisstore.SessionKeys) string
			only []int // the writes below that touch it (nil: all)
		}{
			{key: func(k redisstore.SessionKeys) string { return k.Record }},
			{key: func(k redisstore.SessionKeys) string { return k.UserIndex[1] }, only: []int{9}}, // only ending a running session writes the completed set
			{key: func(k redisstore.SessionKeys) string { return k.Entries }, only: []int{0, 1, 2, 3}},
			{key: func(k redisstore.SessionKeys) string { return k.Index }, only: []int{0, 1, 2, 3}},
			{key: func(k redisstore.SessionKeys) string { return k.Traces }, only: []int{4}},
			{key: func(k redisstore.SessionKeys) string { return k.Context }, only: []int{5, 6, 7}},
		} {
			user := fmt.Sprintf("u%d", n)
			k := srv.Layout().Session(user, "s1")
			b := "/v1/users/" + user + "/sessions/s1"
			h.Do(t, "POST", b+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
			h.Do(t, "POST", b+"/context", `{"id":"c1"}`)
			key := tc.key(k)
			c.Do(t.Context(), c.B().Del().Key(key).Build())
			c.Do(t.Context(), c.B().Set().Key(key).Value("someone else's").Build())
			events := srv.Layout().SessionEvents(user, "s1")
			// and the session's search documents, the user's sessions list
			// and marker
			search := []string{srv.Layout().SearchEntryDocs(user, "s1"), srv.Layout().SearchSessions(user), srv.Layout().SearchStats(user), srv.Layout().UserMarker(user)}
			before := snapshot(k, events, search...)
			for i, w := range []struct{ method, path, body string }{
				{"POST", b + "/entries", `{"question":"q","answer":"a","qa_id":"q2"}`},
				{"PUT", b + "/entries/q1/feedback", `{"feedback_score":3}`},
				{"PATCH", b + "/entries/q1", `{"answer":"b"}`},
				{"DELETE", b + "/entries/q1", ``},
				{"POST", b + "/traces", `{"origin_function":"f","status":"ok"}`},
				{"POST", b + "/context", `{"id":"c2"}`},
				{"PATCH", b + "/context/c1", `{"x":1}`},
				{"DELETE", b + "/context/c1", ``},
				{"PUT", b + "/ttl", `{"ttl_seconds":100}`},
				{"POST", b + "/complete", ``},
			} {
				if tc.only != nil && !slices.Contains(tc.only, i) {
					continue
				}
				r := h.Do(t, w.method, w.path, w.body)
				if r.Status != 409 || r.Code() != "key_wrong_type" || !strings.Contains(r.Body, key) {
					t.Errorf("%s %s with %s a string: %d %s, want 409 key_wrong_type naming it", w.method, w.path, key, r.Status, r.Body)
				}
				if after := snapshot(k, events, search...); !slices.Equal(after, before) {
					t.Fatalf("%s %s with %s a string changed Redis:\n%q\nwas\n%q", w.method, w.path, key, after, before)
				}
			}
			c.Do(t.Context(), c.B().Del().Key(key).Build())
		}
		// Deleting the session still works with a wrong-typed record (it is
		// the way out), but not with a wrong-typed index set it is in (a
		// running session: the running sets).
		k := srv.Layout().Session("u1", "s1")
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q9"}`)
		c.Do(t.Context(), c.B().Del().Key(k.GlobalIndex[0]).Build())
		c.Do(t.Context(), c.B().Set().Key(k.GlobalIndex[0]).Value("x").Build())
		if r := h.Do(t, "DELETE", base, ""); r.Status != 409 || r.Code() != "key_wrong_type" {
			t.Fatalf("delete with a wrong-typed index set: %d %s", r.Status, r.Body)
		}
		c.Do(t.Context(), c.B().Del().Key(k.GlobalIndex[0]).Build())
		c.Do(t.Context(), c.B().Del().Key(k.Record).Build())
		c.Do(t.Context(), c.B().Set().Key(k.Record).Value("x").Build())
		if r := h.Do(t, "DELETE", base, ""); r.Status != 204 {
			t.Fatalf("delete with a wrong-typed record: %d %s", r.Status, r.Body)
		}
	})
}

// The keys a session's writes do not read are checked when the session
// first has them: the lifecycle indexes (the user's and the bucket's
// running sets, the expiry set) when it starts, and its event stream when
// it first records an event. Of another type then, the first write is a
// 409 key_wrong_type naming the key, and nothing is written.
func TestWrongTypedKeysFirstMetAreRefused(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_EVENTS": "always"}, sessions.Factory)
		c := srv.Client(t)
		l := srv.Layout()
		for n, key := range []func(user string) string{
			func(user string) string { return l.Session(user, "s1").UserIndex[0] },
			func(user string) string { return l.Session(user, "s1").GlobalIndex[0] },
			func(user string) string { return l.Session(user, "s1").Expiry },
			func(user string) string { return l.SessionEvents(user, "s1") },
		} {
			user := fmt.Sprintf("u%d", n)
			k := l.Session(user, "s1")
			bad := key(user)
			c.Do(t.Context(), c.B().Set().Key(bad).Value("someone else's").Build())
			watched := append(k.List(), l.SessionEvents(user, "s1"), l.UserMarker(user))
			before := redisstoretest.Snapshot(t, c, watched...)
			r := h.Do(t, "POST", "/v1/users/"+user+"/sessions/s1/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
			if r.Status != 409 || r.Code() != "key_wrong_type" || !strings.Contains(r.Body, bad) {
				t.Errorf("first append with %s a string: %d %s, want 409 key_wrong_type naming it", bad, r.Status, r.Body)
			}
			if after := redisstoretest.Snapshot(t, c, watched...); !slices.Equal(after, before) {
				t.Errorf("first append with %s a string changed Redis:\n%q\nwas\n%q", bad, after, before)
			}
			c.Do(t.Context(), c.B().Del().Key(bad).Build())
		}
	})
}

// An element another program stored that is not a JSON object cannot be
// edited: 409 stored_value_invalid, nothing written, never a 500.
func TestEditOfAnUnreadableElementIsRefused(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		rpush(t, c, keys.Entries, `{"qa_id": "bad", "answer" "x"}`)
		entries := lrange(t, c, keys.Entries)
		for _, w := range []struct{ method, path, body string }{
			{"PATCH", base + "/entries/bad", `{"answer":"y"}`},
			{"PATCH", base + "/entries/bad", `{"memify_metadata":{"a":true}}`},
			{"PUT", base + "/entries/bad/feedback", `{"feedback_score":2}`},
		} {
			if r := h.Do(t, w.method, w.path, w.body); r.Status != 409 || r.Code() != "stored_value_invalid" || !strings.Contains(r.Body, "bad") {
				t.Errorf("%s %s: %d %s, want 409 stored_value_invalid", w.method, w.path, r.Status, r.Body)
			}
		}
		if !slices.Equal(lrange(t, c, keys.Entries), entries) {
			t.Fatal("a refused edit changed the list")
		}
	})
}

// A record field that finish_write reads (slid_at, ttl_seconds as integers,
// status as a status), written wrong by another program, refuses every
// session write before its first write: 409 key_wrong_type, the list and
// the event stream as they were (they used to take the write, emit its
// event and then answer 500).
func TestCorruptRecordFieldsRefuseWritesBeforeAnyWrite(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, ttl.Factory)
		c := srv.Client(t)
		keys := srv.Layout().Session("u1", "s1")
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"q0","question":"q","answer":"a"}`); r.Status != 201 {
			t.Fatalf("first append: %d %s", r.Status, r.Body)
		}
		events := srv.Layout().SessionEvents("u1", "s1")
		for _, field := range [][2]string{{"slid_at", "x"}, {"ttl_seconds", "1.5"}, {"status", "paused"}} {
			if err := c.Do(t.Context(), c.B().Hset().Key(keys.Record).FieldValue().FieldValue(field[0], field[1]).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			before := len(redisstoretest.StreamEvents(t, c, events))
			for _, w := range []struct{ method, path, body string }{
				{"POST", base + "/entries", `{"qa_id":"q1","question":"q","answer":"a"}`},
				{"PUT", base + "/entries/q0/feedback", `{"feedback_score":5}`},
				{"POST", base + "/traces", `{"origin_function":"f","status":"ok"}`},
				{"POST", base + "/context", `{"id":"c1","text":"t"}`},
				{"PUT", base + "/ttl", `{"ttl_seconds":60}`},
			} {
				if r := h.Do(t, w.method, w.path, w.body); r.Status != 409 || r.Code() != "key_wrong_type" {
					t.Errorf("%s=%s: %s %s: %d %s, want 409 key_wrong_type", field[0], field[1], w.method, w.path, r.Status, r.Body)
				}
			}
			if n, _ := c.Do(t.Context(), c.B().Llen().Key(keys.Entries).Build()).AsInt64(); n != 1 {
				t.Errorf("%s=%s: %d entries, want the first one only", field[0], field[1], n)
			}
			if after := len(redisstoretest.StreamEvents(t, c, events)); after != before {
				t.Errorf("%s=%s: %d events emitted by refused writes", field[0], field[1], after-before)
			}
			c.Do(t.Context(), c.B().Hdel().Key(keys.Record).Field(field[0]).Build())
			if field[0] == "status" {
				c.Do(t.Context(), c.B().Hset().Key(keys.Record).FieldValue().FieldValue("status", "running").Build())
			}
		}
	})
}

// An append to a session whose entries list is empty (a new session, or one
// another writer emptied) while its qa_id index is another program's string
// is refused naming the index, and writes nothing: the index is not
// deleted, the list not made.
func TestWrongTypedIndexOfAnEmptyListIsRefused(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory)
		c := srv.Client(t)
		k := srv.Layout().Session("u1", "s1")
		c.Do(t.Context(), c.B().Set().Key(k.Index).Value("someone else's").Build())
		r := h.Do(t, "POST", "/v1/users/u1/sessions/s1/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		if r.Status != 409 || r.Code() != "key_wrong_type" || !strings.Contains(r.Body, k.Index) {
			t.Fatalf("append with the index a string: %d %s, want 409 key_wrong_type naming it", r.Status, r.Body)
		}
		if got, _ := c.Do(t.Context(), c.B().Get().Key(k.Index).Build()).ToString(); got != "someone else's" {
			t.Errorf("the index holds %q, want the other program's string", got)
		}
		for _, key := range []string{k.Entries, k.Record, srv.Layout().SessionEvents("u1", "s1")} {
			if n, _ := c.Do(t.Context(), c.B().Exists().Key(key).Build()).AsInt64(); n != 0 {
				t.Errorf("%s exists after a refused append", key)
			}
		}
	})
}

// With the search index off the append still writes the session's
// entries' documents hash when its trim removes entries of a session that
// has documents (indexed while the index was on): another program's value
// there is refused before anything is written (entries, event, record), as
// guard would, whether or not the session had documents. The trim writes
// no other search key: the user's sessions list or marker of another type
// is left as it is, and the append is stored.
func TestTrimmingAppendChecksTheSearchKeys(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		on := sidecartest.Start(t, srv, envconf.Env{"SEARCH_INDEX": "eager", "SESSION_MAX_ENTRIES": "4"}, sessions.Factory)
		off := sidecartest.Start(t, srv, envconf.Env{"SEARCH_INDEX": "false", "SESSION_MAX_ENTRIES": "4"}, sessions.Factory)
		c := srv.Client(t)
		for n, tc := range []struct {
			key     string
			indexed bool // the five first entries written with the index on
			want    int
		}{
			{key: srv.Layout().SearchEntryDocs("u1", "s1"), indexed: true, want: 409},
			// a session never indexed has no documents to trim: another
			// program's key of that name is left alone
			{key: srv.Layout().SearchEntryDocs("u2", "s1"), indexed: false, want: 201},
			{key: srv.Layout().SearchSessions("u3"), indexed: true, want: 201},
			{key: srv.Layout().SearchStats("u4"), indexed: true, want: 201},
		} {
			user := fmt.Sprintf("u%d", n+1)
			b := "/v1/users/" + user + "/sessions/s1"
			first := off
			if tc.indexed {
				first = on
			}
			for i := range 5 { // five appends of a limit of 4: no trim yet (5*4 <= 4*5)
				if r := first.Do(t, "POST", b+"/entries", fmt.Sprintf(`{"question":"q","answer":"a","qa_id":"q%d"}`, i)); r.Status != 201 {
					t.Fatalf("append q%d: %d %s", i, r.Status, r.Body)
				}
			}
			c.Do(t.Context(), c.B().Set().Key(tc.key).Value("someone else's").Build())
			k := srv.Layout().Session(user, "s1")
			events := srv.Layout().SessionEvents(user, "s1")
			before := len(redisstoretest.StreamEvents(t, c, events))
			r := off.Do(t, "POST", b+"/entries", `{"question":"q","answer":"a","qa_id":"q5"}`)
			if tc.want == 201 {
				if r.Status != 201 {
					t.Errorf("trimming append with %s a string: %d %s, want 201", tc.key, r.Status, r.Body)
				}
				if got, _ := c.Do(t.Context(), c.B().Get().Key(tc.key).Build()).ToString(); got != "someone else's" {
					t.Errorf("%s: %q, want the other program's string", tc.key, got)
				}
				continue
			}
			if r.Status != 409 || r.Code() != "key_wrong_type" || !strings.Contains(r.Body, tc.key) {
				t.Errorf("trimming append with %s a string: %d %s, want 409 key_wrong_type naming it", tc.key, r.Status, r.Body)
			}
			if n, _ := c.Do(t.Context(), c.B().Llen().Key(k.Entries).Build()).AsInt64(); n != 5 {
				t.Errorf("entries after the refusal: %d, want 5", n)
			}
			if after := len(redisstoretest.StreamEvents(t, c, events)); after != before {
				t.Errorf("events after the refusal: %d, want %d", after, before)
			}
			if got, _ := c.Do(t.Context(), c.B().Hget().Key(k.Record).Field("entry_count").Build()).ToString(); got != "5" {
				t.Errorf("record entry_count after the refusal: %q, want 5", got)
			}
		}
	})
}
