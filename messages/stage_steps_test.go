package messages_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// stageSteps runs a staged append's steps by hand on session s1 (the
// step's name, then its ARGV from the token on), each
// answer as strings.
func stageSteps(t *testing.T, srv *redisstoretest.Server) func(args ...string) []string {
	st := sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600})
	return func(args ...string) []string {
		t.Helper()
		msg, err := st.Exec(t.Context(), messages.MessagesStage[args[0]], "alice", "s1", args[1:]...)
		if err != nil {
			t.Fatalf("%v: %v", args[:2], err)
		}
		arr, err := msg.ToArray()
		if err != nil {
			t.Fatalf("%v: %v", args[:2], err)
		}
		out := make([]string, len(arr))
		for i, v := range arr {
			if s, err := v.ToString(); err == nil {
				out[i] = s
			} else if n, err := v.AsInt64(); err == nil {
				out[i] = strconv.FormatInt(n, 10)
			}
		}
		return out
	}
}

// stagedBody is message id as a put sends it: under parent, at created
// (quoted).
func stagedBody(id, parent, created string) string {
	return `{"id":"` + id + `","role":"user","content":"x","parent_id":"` + parent + `","created_at":` + created + `}`
}

// A stage whose lease ran out is dropped in chunks; its writer, coming
// back between two of them, finds its stage lost: it must not stage more
// and commit a path whose first messages the drop removed.
func TestAbandonedStageIsTakenBeforeItsDrop(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"first","role":"user","content":"hi"}`, 201)
		step := stageSteps(t, srv)
		const tok = "writer"
		open := step("open", tok, "5000", "0", "", "latest", "", "10000", "0", "", "1000000", "", "s0", "f", "s3", "f")
		if open[0] != "ok" || open[4] != "first" {
			t.Fatalf("open: %v", open)
		}
		created := open[5]
		// part 0, its lease already out (the writer stalls)
		if r := step("put", tok, "0", "0", "10000", "s0", "f", "1", stagedBody("s0", "first", created),
			"s1", "f", "1", stagedBody("s1", "s0", created), "s2", "f", "1", stagedBody("s2", "s1", created)); r[1] != "staged" {
			t.Fatalf("put 0: %v", r)
		}
		// another write drops the abandoned stage, one message a chunk
		if r := step("drop", "", "1"); r[0] != "ok" || r[2] != "0" {
			t.Fatalf("drop: %v", r)
		}
		// the writer comes back
		if r := step("put", tok, "5000", "1", "10000", "s3", "f", "1", stagedBody("s3", "s2", created)); r[1] != "stage_lost" {
			t.Errorf("the writer's next put after the drop began: %v, want stage_lost", r)
		}
		if r := step("commit", tok, "2", "0", "", "off"); r[1] != "stage_lost" {
			t.Errorf("the writer's commit after the drop began: %v, want stage_lost", r)
		}
		// the next write ends the drop and lands after "first"
		post(t, h, `{"id":"next","role":"assistant","content":"hello"}`, 201)
		if p := pathOf(t, h, "s1", "limit=10"); p.Total != 2 || len(p.Messages) != 2 || p.Messages[0].ID != "first" || p.Messages[1].ID != "next" {
			t.Fatalf("the path after the drop: %+v", p)
		}
	})
}

// A fork or split to a session id that holds a stage (its writer alive,
// or gone) answers as for any existing session: 409 session_exists, at
// once; the stage is the other session's, not the one forked.
func TestNewSessionOverAStagedSession(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		post(t, h, `{"id":"first","role":"user","content":"hi"}`, 201)
		if rep := h.Do(t, "POST", partsPath, part("dead", 0, true, "d", 3)); rep.Status != 202 {
			t.Fatal(rep)
		}
		try := func(what string) {
			t.Helper()
			if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/fork", `{"at":"first","session_id":"parts"}`); rep.Status != 409 || rep.Code() != "session_exists" {
				t.Errorf("a fork to a session with %s: %s, want 409 session_exists", what, rep)
			}
			if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/split", `{"summary":"so far","session_id":"parts"}`); rep.Status != 409 || rep.Code() != "session_exists" {
				t.Errorf("a split to a session with %s: %s, want 409 session_exists", what, rep)
			}
		}
		try("a live stage")
		// the stage's writer died: its lease runs out
		record := srv.Layout().Session("alice", "parts").Record
		st, _ := c.Do(t.Context(), c.B().Hget().Key(record).Field("msg_stage").Build()).ToString()
		f := strings.Split(st, "\t")
		if len(f) < 10 {
			t.Fatalf("msg_stage %q", st)
		}
		f[1] = "1"
		if err := c.Do(t.Context(), c.B().Hset().Key(record).FieldValue().FieldValue("msg_stage", strings.Join(f, "\t")).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		try("an abandoned stage")
	})
}

// A replace_history's stage whose writer died is dropped by the next
// write at once (its staged keys UNLINKed): the old history stays whole.
func TestAbandonedWholeStageIsDropped(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"first","role":"user","content":"hi"}`, 201)
		step := stageSteps(t, srv)
		open := step("open", "w", "5000", "0", "", "whole", "", "10000", "2", "tx op", "1000000", "d", "first", "f", "n1", "f")
		if open[0] != "ok" || open[4] != "" {
			t.Fatalf("open: %v", open)
		}
		// the new history may reuse an old id; the lease runs out at once
		if r := step("put", "w", "0", "0", "10000", "first", "f", "1", `{"id":"first","role":"user","content":"new","parent_id":null,"created_at":`+open[5]+`}`); r[1] != "staged" {
			t.Fatalf("put: %v", r)
		}
		sk := messages.StagedKeys(srv.Layout(), "alice", "s1")
		c := srv.Client(t)
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(sk.Messages, sk.Tree).Build()).AsInt64(); n != 2 {
			t.Fatalf("%d staged keys, want 2", n)
		}
		if rep := h.Do(t, "GET", msgs+"/first", ""); rep.Status != 200 || !strings.Contains(rep.Body, `"content":"hi"`) {
			t.Fatalf("the old message while the new history stages: %s", rep)
		}
		post(t, h, `{"id":"next","role":"assistant","content":"hello"}`, 201)
		if p := pathOf(t, h, "s1", "limit=10"); p.Total != 2 || p.Messages[0].ID != "first" {
			t.Fatalf("the path after the drop: %+v", p)
		}
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(sk.Messages, sk.Tree).Build()).AsInt64(); n != 0 {
			t.Errorf("%d staged keys left after the drop", n)
		}
	})
}

// However often its steps renew the lease, a stage lives at most a minute
// from its open: then the next write drops it.
func TestStageLivesAtMostAMinute(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"first","role":"user","content":"hi"}`, 201)
		step := stageSteps(t, srv)
		open := step("open", "slow", "5000", "0", "", "latest", "", "10000", "0", "", "1000000", "", "s0", "f", "s0", "f")
		if open[0] != "ok" {
			t.Fatalf("open: %v", open)
		}
		// its open a minute and more ago
		c := srv.Client(t)
		record := srv.Layout().Session("alice", "s1").Record
		st, _ := c.Do(t.Context(), c.B().Hget().Key(record).Field("msg_stage").Build()).ToString()
		f := strings.Split(st, "\t")
		f[6] = "1000000"
		if err := c.Do(t.Context(), c.B().Hset().Key(record).FieldValue().FieldValue("msg_stage", strings.Join(f, "\t")).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		created := `"1970-01-01T00:00:01.000000Z"`
		if r := step("put", "slow", "5000", "0", "10000", "s0", "f", "1", stagedBody("s0", "first", created)); r[1] != "staged" {
			t.Fatalf("put: %v", r)
		}
		st, _ = c.Do(t.Context(), c.B().Hget().Key(record).Field("msg_stage").Build()).ToString()
		if f := strings.Split(st, "\t"); len(f) < 2 || f[1] != "61000" {
			t.Fatalf("the put renewed the lease to %q, want 61000 (ms: a minute from its open)", st)
		}
		post(t, h, `{"id":"next","role":"assistant","content":"hello"}`, 201)
		if p := pathOf(t, h, "s1", "limit=10"); p.Total != 2 || p.Messages[1].ID != "next" {
			t.Fatalf("the path: %+v", p)
		}
	})
}
