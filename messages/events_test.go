package messages_test

import (
	"github.com/agentsidecar/agentsidecar/envconf"
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

func types(evs []redisstoretest.StreamEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// Every message write emits its events in its own script: one
// message_appended per append (the message, or the range of a batch),
// message_updated, message_deleted
// (a pop, a subtree, a clear), compaction, and the status events of a
// split and a fork in the sessions they concern. A user message clears a
// pending abort (abort_cleared); a refused or repeated write emits nothing.
func TestMessageWritesEmitEvents(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_EVENTS": "always"}) // reads what every write recorded
		l, c := srv.Layout(), srv.Client(t)
		const s = "/v1/users/alice/sessions/s1"
		do := func(method, path, body string, status int) {
			t.Helper()
			if rep := h.Do(t, method, path, body); rep.Status != status {
				t.Fatalf("%s %s %s: got %s, want %d", method, path, body, rep, status)
			}
		}
		do("POST", s+"/messages", `{"messages":[{"id":"a","role":"system","content":"be brief"},{"id":"b","role":"assistant","content":"hi"}]}`, 201)
		// an abort pending: the next user message clears it
		if err := c.Do(t.Context(), c.B().Hset().Key(l.Session("alice", "s1").Record).FieldValue().FieldValue("abort_requested_at", "1").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		do("POST", s+"/messages", `{"id":"c","role":"user","content":"question"}`, 201)
		do("POST", s+"/messages", `{"id":"c","role":"user","content":"question"}`, 200) // a retry: nothing
		do("POST", s+"/messages", `{"id":"c","role":"user","content":"other"}`, 409)    // id_conflict: nothing
		do("PUT", s+"/messages/c", `{"role":"user","content":"question, edited"}`, 200)
		do("POST", s+"/messages", `{"id":"d","role":"assistant","content":"answer"}`, 201)
		do("POST", s+"/compactions", `{"summary":"greeting","from_id":"a","to_id":"b"}`, 201)
		do("POST", s+"/messages/pop", "", 200)
		do("POST", s+"/fork", `{"at":"c","session_id":"f1"}`, 201)
		do("DELETE", s+"/messages/b?subtree=true", "", 204)
		do("POST", s+"/messages", `{"id":"e","role":"user","content":"again"}`, 201)
		do("DELETE", s+"/messages", "", 204)
		do("POST", s+"/messages", `{"id":"g","role":"user","content":"more"}`, 201)
		do("POST", s+"/split", `{"summary":"so far","session_id":"s2"}`, 201)

		got := redisstoretest.StreamEvents(t, c, l.SessionEvents("alice", "s1"))
		want := []string{"message_appended", "message_appended", "abort_cleared", "message_updated",
			"message_appended", "compaction", "message_deleted", "message_deleted", "message_appended", "message_deleted",
			"message_appended", "status"}
		if g := types(got); !slices.Equal(g, want) {
			t.Fatalf("s1's events:\n got %v\nwant %v", g, want)
		}
		if d := got[0].Data; d["count"] != float64(2) || d["first_id"] != "a" || d["last_id"] != "b" || d["parent_id"] != nil ||
			!slices.Equal(d["ids"].([]any), []any{"a", "b"}) {
			t.Errorf("the batch's message_appended: %v, want the range a..b with its ids", d)
		}
		if d := got[1].Data; d["id"] != "c" || d["content"] != "question" || d["parent_id"] != "b" {
			t.Errorf("a single message's message_appended: %v, want the stored message c", d)
		}
		// got[2]: abort_cleared
		got = slices.Insert(got, 0, got[0]) // the indexes below count one event per message
		if d := got[4].Data; d["id"] != "c" || d["content"] != "question, edited" {
			t.Errorf("message_updated: %v", d)
		}
		if d := got[6].Data; d["from_id"] != "a" || d["to_id"] != "b" || d["summary"] != "greeting" {
			t.Errorf("compaction: %v", d)
		}
		if d := got[7].Data; d["id"] != "d" || d["popped"] != true {
			t.Errorf("pop's message_deleted: %v", d)
		}
		if d := got[8].Data; d["id"] != "b" || d["subtree"] != true || len(d["ids"].([]any)) != 2 {
			t.Errorf("subtree delete's message_deleted: %v, want b and its child c", d)
		}
		if d := got[10].Data; d["cleared"] != true || d["count"] != float64(2) {
			t.Errorf("clear's message_deleted: %v, want cleared 2 (a and e)", d)
		}
		if d := got[12].Data; d["status"] != "completed" || d["end_reason"] != "split" || d["continued_by"] != "s2" {
			t.Errorf("split's status: %v", d)
		}
		if g := types(redisstoretest.StreamEvents(t, c, l.SessionEvents("alice", "s2"))); !slices.Equal(g, []string{"status", "message_appended"}) {
			t.Errorf("the continuation's events: %v, want status (started), message_appended (the summary)", g)
		}
		// a clear with nothing to clear writes nothing and emits nothing
		do("POST", "/v1/users/alice/sessions/e1/messages", `{"id":"x","role":"user","content":"x"}`, 201)
		do("POST", "/v1/users/alice/sessions/e1/messages/pop", "", 200)
		do("DELETE", "/v1/users/alice/sessions/e1/messages", "", 204)
		if g := types(redisstoretest.StreamEvents(t, c, l.SessionEvents("alice", "e1"))); !slices.Equal(g, []string{"message_appended", "message_deleted"}) {
			t.Errorf("e1's events: %v, want the append and the pop only", g)
		}
		f1 := redisstoretest.StreamEvents(t, c, l.SessionEvents("alice", "f1"))
		if len(f1) != 1 || f1[0].Type != "status" || f1[0].Data["parent_session_id"] != "s1" {
			t.Errorf("the fork's events: %+v, want one status started with parent_session_id s1", f1)
		}
	})
}
