package messages_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

type hit struct {
	SessionID string  `json:"session_id"`
	Kind      string  `json:"kind"`
	ID        string  `json:"id"`
	Snippet   string  `json:"snippet"`
	Score     float64 `json:"score"`
	Time      string  `json:"time"`
}

func find(t *testing.T, h *sidecartest.Host, path, q string) []hit {
	t.Helper()
	rep := h.Do(t, "GET", path+"q="+url.QueryEscape(q), "")
	if rep.Status != 200 {
		t.Fatalf("search %q: %s", q, rep)
	}
	var out struct{ Results []hit }
	rep.JSON(t, &out)
	return out.Results
}

// term is word's indexed term (its stem).
func term(t *testing.T, word string) string {
	t.Helper()
	for s := range search.Analyze(word).Terms {
		return s
	}
	t.Fatalf("%q: no term", word)
	return ""
}

func hitIDs(hs []hit) string {
	var out []string
	for _, h := range hs {
		out = append(out, h.SessionID+"/"+h.ID)
	}
	return strings.Join(out, ",")
}

func TestSearch(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		add := func(session, body string) {
			t.Helper()
			if rep := h.Do(t, "POST", "/v1/users/alice/sessions/"+session+"/messages", body); rep.Status != 201 {
				t.Fatalf("append: %s", rep)
			}
		}
		add("s1", `{"id":"a","role":"user","content":"How do I deploy the service to staging?"}`)
		add("s1", `{"id":"b","role":"assistant","content":"Run the deployment pipeline; it deployed fine yesterday. Deploy again after the café opens."}`)
		add("s2", `{"id":"c","role":"user","content":"The weather is nice"}`)
		add("s2", `{"id":"d","role":"user","parts":[{"type":"text","text":"Résumé of the deploy"}]}`)
		add("s3", `{"id":"e","role":"user","item":{"content":[{"type":"input_text","text":"unrelated words only"}]},"format":"openai.responses"}`)
		user := "/v1/users/alice/search?"
		// stems and ranking: b holds three forms of deploy
		// (BM25: d is short, b says it three times, a once in a longer text)
		got := find(t, h, user, "deploying")
		if hitIDs(got) != "s2/d,s1/b,s1/a" {
			t.Fatalf("deploying: %s", hitIDs(got))
		}
		if got[1].Kind != "message" || got[1].Score <= got[2].Score || !strings.Contains(got[1].Snippet, "deploy") || got[1].Time == "" {
			t.Fatalf("hits: %+v", got)
		}
		// case and accents folded
		if got := hitIDs(find(t, h, user, "CAFE resume")); got != "s1/b,s2/d" && got != "s2/d,s1/b" {
			t.Fatalf("cafe resume: %s", got)
		}
		if got := hitIDs(find(t, h, user, "unrelated")); got != "s3/e" {
			t.Fatalf("item text: %s", got)
		}
		// one session, rank=relevance on the session search
		if got := find(t, h, "/v1/users/alice/sessions/s2/search?rank=relevance&", "deploy"); len(got) != 1 || got[0].ID != "d" || got[0].SessionID != "" {
			t.Fatalf("session search: %+v", got)
		}
		// an update is found by its new words only, a delete not at all
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s2/messages/c", `{"role":"user","content":"rain tomorrow"}`); rep.Status != 200 {
			t.Fatal(rep)
		}
		if got := find(t, h, user, "weather"); len(got) != 0 {
			t.Fatalf("old words still found: %s", hitIDs(got))
		}
		if got := hitIDs(find(t, h, user, "rain")); got != "s2/c" {
			t.Fatalf("new words: %s", got)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/messages/pop", ""); rep.Status != 200 {
			t.Fatal(rep)
		}
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s3", ""); rep.Status != 204 {
			t.Fatal(rep)
		}
		if got := hitIDs(find(t, h, user, "deploy unrelated")); got != "s2/d,s1/a" && got != "s1/a,s2/d" {
			t.Fatalf("after pop and session delete: %s", got)
		}
		// the deleted session's index went with it; the popped message's
		// document and its own terms' postings left s1's
		c, l, ctx := srv.Client(t), srv.Layout(), t.Context()
		if n, err := c.Do(ctx, c.B().Exists().Key(l.SearchDocs("alice", "s3")).Build()).AsInt64(); err != nil || n != 0 {
			t.Fatalf("index of a deleted session left: %d (%v)", n, err)
		}
		s1 := l.SearchDocs("alice", "s1")
		for _, f := range []string{"=b", term(t, "yesterday"), term(t, "pipeline")} {
			if held, err := c.Do(ctx, c.B().Hexists().Key(s1).Field(f).Build()).AsBool(); err != nil || held {
				t.Errorf("%s field %q after b's pop: held %v (%v)", s1, f, held, err)
			}
		}
		if held, err := c.Do(ctx, c.B().Hexists().Key(s1).Field(term(t, "deploy")).Build()).AsBool(); err != nil || !held {
			t.Errorf("%s: a's term deploy gone (%v)", s1, err)
		}
		if rep := h.Do(t, "GET", user+"q=the", ""); rep.Status != 400 || rep.Code() != "invalid_query" {
			t.Fatalf("stop words only: %s", rep)
		}
	})
}

// A cleared session's document versions start again: a message stored
// anew under an id the cleared session held is found by its new words
// only, never by the postings its earlier text left.
func TestSearchAfterClear(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"m1","role":"user","content":"apples from the orchard"}`, 201)
		if rep := h.Do(t, "DELETE", msgs, ""); rep.Status != 204 {
			t.Fatalf("clear: %s", rep)
		}
		post(t, h, `{"id":"m1","role":"user","content":"bananas only"}`, 201)
		user := "/v1/users/alice/search?"
		if got := hitIDs(find(t, h, user, "apples")); got != "" {
			t.Fatalf("apples: got %q, want no hit (m1 no longer says it)", got)
		}
		if got := hitIDs(find(t, h, user, "bananas")); got != "s1/m1" {
			t.Fatalf("bananas: got %q, want s1/m1", got)
		}
		// the same after the session is deleted and made again
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s1", ""); rep.Status != 204 {
			t.Fatalf("delete: %s", rep)
		}
		post(t, h, `{"id":"m1","role":"user","content":"cherries now"}`, 201)
		if got := hitIDs(find(t, h, user, "bananas")); got != "" {
			t.Fatalf("bananas after delete: got %q, want no hit", got)
		}
		if got := hitIDs(find(t, h, user, "cherries")); got != "s1/m1" {
			t.Fatalf("cherries: got %q, want s1/m1", got)
		}
	})
}
