package messages_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// TestMain shares one Redis Cluster among the package's cluster subtests
// (flushed before each) and stops it at the end.
func TestMain(m *testing.M) { os.Exit(redisstoretest.Main(m)) }

const msgs = "/v1/users/alice/sessions/s1/messages"

func start(t *testing.T, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	return sidecartest.Start(t, srv, env, messagesModules()...)
}

func messagesModules() []sidecar.Factory {
	return []sidecar.Factory{sessions.Factory, ttl.Factory, usage.Factory, registry.Factory, messages.Factory}
}

// msg is a stored message as clients read it.
type msg struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    *string         `json:"content"`
	Parts      json.RawMessage `json:"parts"`
	Item       json.RawMessage `json:"item"`
	Format     *string         `json:"format"`
	Metadata   json.RawMessage `json:"metadata"`
	ParentID   *string         `json:"parent_id"`
	CreatedAt  string          `json:"created_at"`
	Tokens     int64           `json:"tokens"`
	TokenCount *int64          `json:"token_count"`
}

type page struct {
	Messages            []msg   `json:"messages"`
	Total               int64   `json:"total"`
	TotalTokens         int64   `json:"total_tokens"`
	NextCursor          *string `json:"next_cursor"`
	CompactionSuggested bool    `json:"compaction_suggested"`
}

// post appends body and checks the status; it returns the stored message.
func post(t *testing.T, h *sidecartest.Host, body string, status int, header ...string) msg {
	t.Helper()
	rep := h.Do(t, "POST", msgs, body, header...)
	if rep.Status != status {
		t.Fatalf("POST %s: got %s, want %d", body, rep, status)
	}
	var m msg
	if status < 300 {
		rep.JSON(t, &m)
	}
	return m
}

// path reads GET .../messages?query.
func path(t *testing.T, h *sidecartest.Host, query string) page {
	t.Helper()
	rep := h.Do(t, "GET", msgs+"?"+query, "")
	if rep.Status != 200 {
		t.Fatalf("GET ?%s: got %s, want 200", query, rep)
	}
	var p page
	rep.JSON(t, &p)
	return p
}

func ids(p page) string {
	var out []string
	for _, m := range p.Messages {
		out = append(out, m.ID)
	}
	return strings.Join(out, ",")
}

func TestAppendAndPath(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		a := post(t, h, `{"id":"a","role":"user","content":"hello there"}`, 201)
		if a.ParentID != nil || a.Tokens != 7 || a.CreatedAt == "" { // ceil(max(11/4, 2*1.3)) + 4
			t.Fatalf("a: %+v", a)
		}
		b := post(t, h, `{"id":"b","role":"assistant","content":"hi"}`, 201)
		if b.ParentID == nil || *b.ParentID != "a" {
			t.Fatalf("b's parent: %+v, want a", b)
		}
		// a branch from a, and a new root
		post(t, h, `{"id":"c","role":"assistant","content":"hey","parent_id":"a"}`, 201)
		post(t, h, `{"id":"r","role":"system","content":"x","parent_id":null}`, 201)
		post(t, h, `{"id":"d","role":"user","content":"more","parent_id":"c"}`, 201)

		p := path(t, h, "")
		if got := ids(p); got != "a,c,d" || p.Total != 3 || p.NextCursor != nil {
			t.Fatalf("latest path: got %s (total %d), want a,c,d", got, p.Total)
		}
		if want := a.Tokens + 6 + 6; p.TotalTokens != want {
			t.Fatalf("total_tokens: got %d, want %d", p.TotalTokens, want)
		}
		if got := ids(path(t, h, "leaf=b")); got != "a,b" {
			t.Fatalf("path to b: got %s, want a,b", got)
		}
		if got := ids(path(t, h, "order=desc&limit=2")); got != "d,c" {
			t.Fatalf("desc: got %s, want d,c", got)
		}
		rep := h.Do(t, "GET", msgs+"/a/children", "")
		var kids struct{ Messages []msg }
		rep.JSON(t, &kids)
		if len(kids.Messages) != 2 || kids.Messages[0].ID != "b" || kids.Messages[1].ID != "c" {
			t.Fatalf("children of a: %s", rep.Body)
		}
		if rep := h.Do(t, "GET", msgs+"/zz", ""); rep.Status != 404 {
			t.Fatalf("unknown message: %s", rep)
		}
		rec := h.Do(t, "GET", "/v1/users/alice/sessions/s1", "")
		var r struct {
			MessageCount int64 `json:"message_count"`
			EntryCount   int64 `json:"entry_count"`
		}
		rec.JSON(t, &r)
		if r.MessageCount != 5 || r.EntryCount != 0 {
			t.Fatalf("record: %s", rec.Body)
		}
	})
}

func TestPaging(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		var batch []string
		for i := range 40 {
			batch = append(batch, fmt.Sprintf(`{"id":"m%d","role":"user","content":"x"}`, i))
		}
		rep := h.Do(t, "POST", msgs, `{"messages":[`+strings.Join(batch, ",")+`]}`)
		if rep.Status != 201 {
			t.Fatalf("batch: %s", rep)
		}
		want := func(from, to int) string {
			var out []string
			step := 1
			if to < from {
				step = -1
			}
			for i := from; i != to+step; i += step {
				out = append(out, fmt.Sprintf("m%d", i))
			}
			return strings.Join(out, ",")
		}
		cases := []struct {
			query, want, next string
		}{
			{"limit=10", want(0, 9), "m9"},
			{"limit=10&after=m9", want(10, 19), "m19"},
			{"limit=10&after=m35", want(36, 39), ""},
			{"limit=10&offset=5", want(5, 14), "m14"},
			{"limit=5&before=m20", want(15, 19), "m15"},
			{"limit=5&before=m2", want(0, 1), ""},
			{"order=desc&limit=10", want(39, 30), "m30"},
			{"order=desc&limit=10&after=m30", want(29, 20), "m20"},
			{"order=desc&limit=10&offset=35", want(4, 0), ""},
			{"order=desc&limit=5&before=m30", want(35, 31), "m35"},
			{"order=desc&limit=5&before=m36", want(39, 37), ""},
			{"limit=5&leaf=m12&order=desc", want(12, 8), "m8"},
		}
		for _, c := range cases {
			p := path(t, h, c.query)
			next := ""
			if p.NextCursor != nil {
				next = *p.NextCursor
			}
			if got := ids(p); got != c.want || next != c.next || p.Total != 40 && !strings.Contains(c.query, "leaf") {
				t.Errorf("?%s: got %s next %q total %d, want %s next %q", c.query, got, next, p.Total, c.want, c.next)
			}
		}
		if rep := h.Do(t, "GET", msgs+"?leaf=m5&after=m9", ""); rep.Status != 400 || rep.Code() != "invalid_cursor" {
			t.Fatalf("cursor off the path: got %s, want 400 invalid_cursor", rep)
		}
		for _, q := range []string{"after=m%20x", "before=" + strings.Repeat("m", 200)} {
			if rep := h.Do(t, "GET", msgs+"?"+q, ""); rep.Status != 400 || rep.Code() != "invalid_cursor" {
				t.Errorf("?%s, no message id: got %s, want 400 invalid_cursor", q, rep)
			}
		}
	})
}
