package messages_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

type record struct {
	SessionID       string  `json:"session_id"`
	Status          string  `json:"status"`
	Title           *string `json:"title"`
	ParentSessionID *string `json:"parent_session_id"`
	Summary         *string `json:"summary"`
	EndReason       *string `json:"end_reason"`
	MessageCount    int64   `json:"message_count"`
}

func TestFork(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"messages":[{"id":"a","role":"user","content":"one"},{"id":"b","role":"assistant","content":"two"},{"id":"c","role":"user","content":"three"}]}`, 201)
		post(t, h, `{"id":"b2","role":"assistant","content":"alt","parent_id":"a"}`, 201)
		rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/fork", `{"at":"b","session_id":"s2","title":"what if"}`)
		var r record
		rep.JSON(t, &r)
		if rep.Status != 201 || r.SessionID != "s2" || *r.ParentSessionID != "s1" || *r.Title != "what if" || r.MessageCount != 2 || r.Status != "running" {
			t.Fatalf("fork: %s", rep)
		}
		p := pathOf(t, h, "s2", "")
		if ids(p) != "a,b" || p.Total != 2 {
			t.Fatalf("forked path: %s", ids(p))
		}
		orig := path(t, h, "leaf=b")
		if p.TotalTokens != orig.TotalTokens || p.Messages[1].CreatedAt != orig.Messages[1].CreatedAt || *p.Messages[1].Content != "two" {
			t.Fatalf("forked messages differ: %+v vs %+v", p, orig)
		}
		// the fork grows on its own; the source is unchanged
		rep = h.Do(t, "POST", "/v1/users/alice/sessions/s2/messages", `{"id":"d","role":"user","content":"four"}`)
		if rep.Status != 201 || !strings.Contains(rep.Body, `"parent_id":"b"`) {
			t.Fatalf("append to the fork: %s", rep)
		}
		if got := ids(path(t, h, "")); got != "a,b2" {
			t.Fatalf("source path: %s", got)
		}
		for _, c := range []struct {
			body   string
			status int
			code   string
		}{
			{`{"at":"zz","session_id":"s3"}`, 404, "not_found"},
			{`{"at":"b","session_id":"s2"}`, 409, "session_exists"},
			{`{"at":"b","session_id":"s1"}`, 400, "invalid_field"},
			{`{"session_id":"s3"}`, 400, "invalid_field"},
		} {
			if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/fork", c.body); rep.Status != c.status || rep.Code() != c.code {
				t.Errorf("fork %s: got %s, want %d %s", c.body, rep, c.status, c.code)
			}
		}
		// Idempotency-Key without session_id: a retry answers the same session
		one := h.Do(t, "POST", "/v1/users/alice/sessions/s1/fork", `{"at":"c"}`, "Idempotency-Key", "f1")
		two := h.Do(t, "POST", "/v1/users/alice/sessions/s1/fork", `{"at":"c"}`, "Idempotency-Key", "f1")
		var r1, r2 record
		one.JSON(t, &r1)
		two.JSON(t, &r2)
		if one.Status != 201 || two.Status != 200 || r1.SessionID != r2.SessionID || r1.MessageCount != 3 {
			t.Fatalf("keyed fork: %s then %s", one, two)
		}
	})
}

func TestSplit(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"a","role":"user","content":"one"}`, 201)
		rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/split", `{"summary":"We talked about one.","session_id":"s1-2","title":"part 2"}`)
		var r record
		rep.JSON(t, &r)
		if rep.Status != 201 || r.SessionID != "s1-2" || *r.ParentSessionID != "s1" || r.MessageCount != 1 || r.Status != "running" {
			t.Fatalf("split: %s", rep)
		}
		p := pathOf(t, h, "s1-2", "")
		if len(p.Messages) != 1 || p.Messages[0].Role != "system" || *p.Messages[0].Content != "We talked about one." || p.Messages[0].ParentID != nil {
			t.Fatalf("continuation: %+v", p)
		}
		var old record
		h.Do(t, "GET", "/v1/users/alice/sessions/s1", "").JSON(t, &old)
		if old.Status != "completed" || *old.EndReason != "split" || *old.Summary != "We talked about one." || old.MessageCount != 1 {
			t.Fatalf("split session: %+v", old)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/split", `{"summary":"again","session_id":"s1-3"}`); rep.Status != 409 || rep.Code() != "session_ended" {
			t.Fatalf("split of an ended session: %s", rep)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/nope/split", `{"summary":"x"}`); rep.Status != 404 {
			t.Fatalf("split of no session: %s", rep)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1-2/split", `{"summary":""}`); rep.Status != 400 {
			t.Fatalf("empty summary: %s", rep)
		}
		if !strings.Contains(h.Metrics(t), `sidecar_sessions_ended_total{end_reason="split"} 1`) {
			t.Fatal("split not counted in sidecar_sessions_ended_total")
		}
	})
}
