package messages_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

type compaction struct {
	ID     string `json:"id"`
	FromID string `json:"from_id"`
	ToID   string `json:"to_id"`
}

func TestCompactions(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		var b []string
		for i := range 10 {
			b = append(b, `{"id":"m`+string(rune('0'+i))+`","role":"user","content":"word word word word"}`)
		}
		post(t, h, `{"messages":[`+strings.Join(b, ",")+`]}`, 201) // 10 tokens each
		post(t, h, `{"id":"x","role":"user","content":"branch","parent_id":"m3"}`, 201)
		post(t, h, `{"id":"m10","role":"user","content":"word word word word","parent_id":"m9"}`, 201)
		do := func(body string, status int, code string) compaction {
			t.Helper()
			rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/compactions", body)
			if rep.Status != status || (code != "" && rep.Code() != code) {
				t.Fatalf("compact %s: got %s, want %d %s", body, rep, status, code)
			}
			var c compaction
			if status == 201 {
				rep.JSON(t, &c)
			}
			return c
		}
		c1 := do(`{"summary":"first","from_id":"m2","to_id":"m4"}`, 201, "")
		p := path(t, h, "")
		if got := ids(p); got != "m0,m1,compaction:"+c1.ID+",m5,m6,m7,m8,m9,m10" {
			t.Fatalf("with an overlay: %s", got)
		}
		// 11 messages of 10 tokens; 3 of them read as one summary of 6
		if p.Total != 9 || p.TotalTokens != 8*10+6 || p.Messages[2].Role != "system" || *p.Messages[2].Content != "first" {
			t.Fatalf("overlay page: total %d tokens %d %+v", p.Total, p.TotalTokens, p.Messages[2])
		}
		if raw := path(t, h, "compacted=false"); raw.Total != 11 || raw.TotalTokens != 110 {
			t.Fatalf("raw: %d %d", raw.Total, raw.TotalTokens)
		}
		// paging through the overlay, both ways, with its id as a cursor
		if got := ids(path(t, h, "limit=3")); got != "m0,m1,compaction:"+c1.ID {
			t.Fatalf("asc page: %s", got)
		}
		if got := ids(path(t, h, "limit=2&after=compaction:"+c1.ID)); got != "m5,m6" {
			t.Fatalf("after the overlay: %s", got)
		}
		if got := ids(path(t, h, "order=desc&limit=3&after=m6")); got != "m5,compaction:"+c1.ID+",m1" {
			t.Fatalf("desc through the overlay: %s", got)
		}
		if rep := h.Do(t, "GET", msgs+"?after=m3", ""); rep.Code() != "invalid_cursor" {
			t.Fatalf("cursor inside a compacted range: %s", rep)
		}
		// a path that does not hold the range has no overlay
		if got := ids(path(t, h, "leaf=x")); got != "m0,m1,m2,m3,x" {
			t.Fatalf("branch path: %s", got)
		}
		if rep := h.Do(t, "GET", msgs+"/compaction:"+c1.ID, ""); rep.Status != 404 {
			t.Fatalf("GET the synthetic message: %s", rep)
		}
		do(`{"summary":"s","from_id":"m3","to_id":"m6"}`, 409, "compaction_overlap")
		do(`{"summary":"s","from_id":"m5","to_id":"m2"}`, 400, "invalid_range")
		do(`{"summary":"s","from_id":"m3","to_id":"x"}`, 409, "compaction_overlap") // shares m3 with c1
		do(`{"summary":"s","from_id":"m5","to_id":"x"}`, 400, "invalid_range")
		do(`{"summary":"s","from_id":"m5","to_id":"zz"}`, 400, "invalid_range")
		c2 := do(`{"summary":"later","from_id":"m6","to_id":"m7"}`, 201, "")
		// a wider one supersedes both
		c3 := do(`{"summary":"all","from_id":"m1","to_id":"m8"}`, 201, "")
		rep := h.Do(t, "GET", "/v1/users/alice/sessions/s1/compactions", "")
		var list struct{ Compactions []compaction }
		rep.JSON(t, &list)
		if len(list.Compactions) != 1 || list.Compactions[0].ID != c3.ID {
			t.Fatalf("in force after supersede: %s (c2 %s)", rep.Body, c2.ID)
		}
		if got := ids(path(t, h, "")); got != "m0,compaction:"+c3.ID+",m9,m10" {
			t.Fatalf("after supersede: %s", got)
		}
		// deleting an endpoint deletes the compaction
		if rep := h.Do(t, "DELETE", msgs+"/m8?subtree=true", ""); rep.Status != 204 {
			t.Fatalf("delete m8: %s", rep)
		}
		h.Do(t, "GET", "/v1/users/alice/sessions/s1/compactions", "").JSON(t, &list)
		if len(list.Compactions) != 0 {
			t.Fatalf("compaction left after its endpoint's delete: %+v", list)
		}
	})
}

func TestCompactionToolCalls(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"messages":[
			{"id":"u","role":"user","content":"weather?"},
			{"id":"a","role":"assistant","tool_calls":[{"id":"call1","name":"weather","arguments":"{}"}]},
			{"id":"t","role":"tool","tool_call_id":"call1","content":"sunny"},
			{"id":"f","role":"assistant","content":"It is sunny"}]}`, 201)
		for _, c := range []struct {
			from, to string
			status   int
			code     string
		}{
			{"u", "a", 400, "splits_tool_call"},
			{"t", "f", 400, "splits_tool_call"},
			{"a", "t", 201, ""},
		} {
			rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/compactions", `{"summary":"s","from_id":"`+c.from+`","to_id":"`+c.to+`"}`)
			if rep.Status != c.status || (c.code != "" && rep.Code() != c.code) {
				t.Errorf("%s..%s: got %s, want %d %s", c.from, c.to, rep, c.status, c.code)
			}
		}
		// fork keeps the compactions wholly inside the path; pop of an endpoint drops it
		rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/fork", `{"at":"t","session_id":"s2"}`)
		if rep.Status != 201 {
			t.Fatalf("fork: %s", rep)
		}
		if p := pathOf(t, h, "s2", ""); p.Total != 2 {
			t.Fatalf("fork's path as read: %d messages, want u and the compaction", p.Total)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s2/messages/pop", ""); rep.Status != 200 {
			t.Fatalf("pop: %s", rep)
		}
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/s2/compactions", ""); rep.Body != `{"compactions":[]}`+"\n" {
			t.Fatalf("compactions after the pop of an endpoint: %s", rep.Body)
		}
	})
}
