package messages_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// An operation's id answers as applied however its messages fared since:
// a replace_history repeated after a later one replaced its history is
// 200 with nothing written, staged (past one bounded step) as in one
// script; it must not replace the later history again.
func TestReplaceHistoryRepeatAfterALaterOneWritesNothing(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const url = "/v1/users/alice/sessions/hist/messages/transactions"
		for _, n := range []int{3, 300} { // one script, then staged
			first := historyTx("first", "a", n, nil)
			if rep := h.Do(t, "POST", url, first); rep.Status != 201 {
				t.Fatalf("replace_history of %d: %.300s", n, rep)
			}
			if rep := h.Do(t, "POST", url, historyTx("later", "b", 2, nil)); rep.Status != 201 {
				t.Fatalf("the later replace_history: %.300s", rep)
			}
			if rep := h.Do(t, "POST", url, first); rep.Status != 200 {
				t.Errorf("replace_history of %d repeated after a later one: %.200s, want 200 (applied before)", n, rep)
			}
			if p := pathOf(t, h, "hist", "limit=10"); p.Total != 2 || p.Messages[0].ID != "b0" {
				t.Errorf("replace_history of %d repeated after a later one: the history holds %d messages, first %s; want the later one's 2",
					n, p.Total, p.Messages[0].ID)
			}
			if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/hist", ""); rep.Status != 204 {
				t.Fatal(rep)
			}
		}
	})
}

// A whole stage's commit with nothing staged (no put: only a caller
// driving the steps by hand) is refused before it writes: the history it
// would replace stays, and the stage with it.
func TestWholeStageCommitWithNothingStagedWritesNothing(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"first","role":"user","content":"hi"}`, 201)
		step := stageSteps(t, srv)
		if open := step("open", "w", "5000", "0", "", "whole", "", "10000", "2", "tx op", "1000000", "d", "n0", "f", "n1", "f"); open[0] != "ok" {
			t.Fatalf("open: %v", open)
		}
		st := sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600})
		if _, err := st.Exec(t.Context(), messages.MessagesStage["commit"], "alice", "s1", "w", "0", "0", "d", "off"); err == nil {
			t.Errorf("the commit of a whole stage with nothing staged passed")
		}
		c := srv.Client(t)
		k := messages.SessionKeys(srv.Layout(), "alice", "s1")
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(k.Messages, k.Tree, k.Children, k.Order).Build()).AsInt64(); n != 4 {
			t.Errorf("%d of the session's 4 messages keys left after the refused commit", n)
		}
		if rep := h.Do(t, "GET", msgs+"/first", ""); rep.Status != 200 || !strings.Contains(rep.Body, `"content":"hi"`) {
			t.Errorf("the old message after the refused commit: %s", rep)
		}
	})
}

// A big append (staged) whose Idempotency-Key the ring holds while its
// messages are all gone (a replace_history keeps the ring) appends again,
// as one in a single script does: 201, its messages the latest path.
func TestStagedAppendAgainUnderAKeyWhoseMessagesAreGone(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const url = "/v1/users/alice/sessions/hist/messages"
		for _, n := range []int{3, 150} { // one script, then staged
			if rep := h.Do(t, "POST", url, chatBatch("a", n), "Idempotency-Key", "k"); rep.Status != 201 {
				t.Fatalf("the append of %d: %.300s", n, rep)
			}
			if rep := h.Do(t, "POST", url+"/transactions", historyTx("replace", "b", 2, nil)); rep.Status != 201 {
				t.Fatalf("replace_history: %.300s", rep)
			}
			if rep := h.Do(t, "POST", url, chatBatch("a", n), "Idempotency-Key", "k"); rep.Status != 201 {
				t.Errorf("the append of %d again under its key, its messages gone: %.200s, want 201", n, rep)
			}
			if p := pathOf(t, h, "hist", "limit=1"); p.Total != int64(2+n) {
				t.Errorf("the append of %d again: the path holds %d messages, want %d", n, p.Total, 2+n)
			}
			if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/hist", ""); rep.Status != 204 {
				t.Fatal(rep)
			}
		}
	})
}

// The staged families leave the record's fams with their keys: at the
// commit, and at the drop of a whole stage (else every later slide and
// delete of the session touches keys it no longer has).
func TestWholeStageLeavesNoStagedFamilyListed(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"first","role":"user","content":"hi"}`, 201)
		step := stageSteps(t, srv)
		open := step("open", "w", "5000", "0", "", "whole", "", "10000", "2", "tx op", "1000000", "d", "n0", "f", "n0", "f")
		if open[0] != "ok" {
			t.Fatalf("open: %v", open)
		}
		if r := step("put", "w", "0", "0", "10000", "n0", "f", "1", `{"id":"n0","role":"user","content":"new","parent_id":null,"created_at":`+open[5]+`}`); r[1] != "staged" {
			t.Fatalf("put: %v", r)
		}
		c := srv.Client(t)
		record := srv.Layout().Session("alice", "s1").Record
		fams := func() string {
			v, _ := c.Do(t.Context(), c.B().Hget().Key(record).Field("fams").Build()).ToString()
			return v
		}
		if f := fams(); !strings.Contains(f, " sm ") {
			t.Fatalf("fams while the stage lives: %q, want the staged families", f)
		}
		// the next write drops the abandoned stage
		post(t, h, `{"id":"next","role":"assistant","content":"hello"}`, 201)
		for _, code := range []string{" sm ", " sn ", " sk ", " so "} {
			if f := fams(); strings.Contains(f, code) {
				t.Errorf("fams after the drop of a whole stage: %q lists%s", f, code)
			}
		}
	})
}
