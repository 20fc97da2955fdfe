package sessions_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
)

type searchHit struct {
	SessionID string  `json:"session_id"`
	Kind      string  `json:"kind"`
	ID        string  `json:"id"`
	Snippet   string  `json:"snippet"`
	Score     float64 `json:"score"`
	Time      string  `json:"time"`
}

// startSearch is a host with the user-wide search route (messages module)
// beside the sessions module.
func startSearch(t *testing.T, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	return sidecartest.Start(t, srv, env, sessions.Factory, ttl.Factory, messages.Factory)
}

// hits runs a search (path ends in ? or &) and answers "kind:id" of each
// hit, best first.
func hits(t *testing.T, h *sidecartest.Host, path, q string) ([]searchHit, string) {
	t.Helper()
	rep := h.Do(t, "GET", path+"q="+url.QueryEscape(q), "")
	if rep.Status != 200 {
		t.Fatalf("search %q: %s", q, rep)
	}
	var out struct{ Results []searchHit }
	rep.JSON(t, &out)
	var ids []string
	for _, r := range out.Results {
		ids = append(ids, r.SessionID+"/"+r.Kind+":"+r.ID)
	}
	return out.Results, strings.Join(ids, ",")
}

func cogneeQA(qa, question, answer string, at time.Time) string {
	return fmt.Sprintf(`{"time": %q, "question": %q, "context": "", "answer": %q, "qa_id": %q, "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`,
		at.UTC().Format("2006-01-02T15:04:05.000000"), question, answer, qa)
}

// entriesFixture is a host holding alice's entries and a message: s1's q1
// (deploying the billing service) and q2 (the weather, in a café in
// Zürich), s2's q3 (deployed) and m1 (deploy notes). It answers the two
// sessions' paths.
func entriesFixture(t *testing.T, srv *redisstoretest.Server) (h *sidecartest.Host, s1, s2 string) {
	t.Helper()
	h = startSearch(t, srv, nil)
	s1, s2 = "/v1/users/alice/sessions/s1", "/v1/users/alice/sessions/s2"
	for _, w := range [][2]string{
		{s1 + "/entries", `{"qa_id":"q1","question":"How do I deploy the billing service?","answer":"Run the deployment pipeline, then deploy again."}`},
		{s1 + "/entries", `{"qa_id":"q2","question":"What is the weather?","answer":"Sunny.","context":"a café in Zürich"}`},
		{s2 + "/entries", `{"qa_id":"q3","question":"Deployed yesterday?","answer":"yes"}`},
		{s2 + "/messages", `{"id":"m1","role":"user","content":"deploy notes"}`},
	} {
		if rep := h.Do(t, "POST", w[0], w[1]); rep.Status != 201 {
			t.Fatalf("POST %s: %s", w[0], rep)
		}
	}
	return h, s1, s2
}

// The sidecar's own entries are found (stemmed, ranked, with a snippet),
// across sessions and beside messages, by their context too (accents and
// case folded), and in one session's search; rank=recent is unchanged.
func TestEntriesRelevanceSearch(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h, s1, s2 := entriesFixture(t, srv)
		user := "/v1/users/alice/search?"
		got, ids := hits(t, h, user, "deploying")
		if len(got) != 3 || !strings.Contains(ids, "s1/entry:q1") || !strings.Contains(ids, "s2/entry:q3") || !strings.Contains(ids, "s2/message:m1") {
			t.Fatalf("deploying: %s", ids)
		}
		for _, g := range got {
			if g.Kind == "entry" && g.ID == "q1" && (!strings.Contains(g.Snippet, "deploy") || g.Score <= 0 || g.Time == "") {
				t.Fatalf("q1 hit: %+v", g)
			}
		}
		// the context counts, accents and case folded
		if _, ids := hits(t, h, user, "CAFE zurich"); ids != "s1/entry:q2" {
			t.Fatalf("cafe zurich: %s", ids)
		}
		// one session: entries and messages of that session only
		if _, ids := hits(t, h, s2+"/search?rank=relevance&", "deploy"); ids != "/entry:q3,/message:m1" && ids != "/message:m1,/entry:q3" {
			t.Fatalf("session search: %s", ids)
		}
		// rank=recent is unchanged: entries containing every word
		if rep := h.Do(t, "GET", s1+"/search?q=deploy", ""); rep.Status != 200 || !strings.Contains(rep.Body, `"q1"`) || strings.Contains(rep.Body, `"q2"`) {
			t.Fatalf("recent search: %s", rep)
		}
	})
}

// The sidecar's own entry writes keep the index: feedback keeps an
// entry's document, a text PATCH makes it found by its new words only, a
// delete takes it out; deleting the session's messages keeps its entries;
// deleting the session takes them out.
func TestEntriesIndexFollowsTheirWrites(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h, s1, s2 := entriesFixture(t, srv)
		user := "/v1/users/alice/search?"
		// (the user's first search builds the index under on-demand)
		if _, ids := hits(t, h, user, "billing"); ids != "s1/entry:q1" {
			t.Fatalf("billing: %s", ids)
		}
		if rep := h.Do(t, "PUT", s1+"/entries/q1/feedback", `{"feedback_score":5}`); rep.Status != 200 {
			t.Fatal(rep)
		}
		if _, ids := hits(t, h, user, "billing"); ids != "s1/entry:q1" {
			t.Fatalf("billing after feedback: %s", ids)
		}
		if rep := h.Do(t, "PATCH", s1+"/entries/q1", `{"question":"How do I rotate the invoices?"}`); rep.Status != 200 {
			t.Fatal(rep)
		}
		if _, ids := hits(t, h, user, "billing"); ids != "" {
			t.Fatalf("old words still found: %s", ids)
		}
		if _, ids := hits(t, h, user, "invoice"); ids != "s1/entry:q1" {
			t.Fatalf("new words: %s", ids)
		}
		if _, ids := hits(t, h, user, "pipeline"); ids != "s1/entry:q1" {
			t.Fatalf("unchanged answer: %s", ids)
		}
		// a delete takes the entry out
		if rep := h.Do(t, "DELETE", s1+"/entries/q2", ""); rep.Status != 204 {
			t.Fatal(rep)
		}
		if _, ids := hits(t, h, user, "cafe"); ids != "" {
			t.Fatalf("deleted entry found: %s", ids)
		}
		// clearing the messages keeps the entries
		if rep := h.Do(t, "DELETE", s2+"/messages", ""); rep.Status != 204 {
			t.Fatal(rep)
		}
		if _, ids := hits(t, h, user, "deploy"); ids != "s1/entry:q1,s2/entry:q3" && ids != "s2/entry:q3,s1/entry:q1" {
			t.Fatalf("after clearing s2's messages: %s", ids)
		}
		// deleting the session takes its entries out
		if rep := h.Do(t, "DELETE", s2, ""); rep.Status != 204 {
			t.Fatal(rep)
		}
		if _, ids := hits(t, h, user, "deploy"); ids != "s1/entry:q1" {
			t.Fatalf("after deleting s2: %s", ids)
		}
		// the user's index holds what is left: s1's one entry
		if n := indexedDocs(t, srv, "alice"); n != 1 {
			t.Fatalf("%d documents indexed, want 1", n)
		}
	})
}

// Entries Cognee wrote itself are indexed when the sidecar next touches the
// session: a relevance search of the session takes them in first, an
// append takes in a bounded step of them; a list Cognee rewrote is indexed
// again from the start (its dropped entries go); entries the sidecar trims
// go.
func TestEntriesWrittenByCogneeAreIndexed(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := startSearch(t, srv, envconf.Env{"SESSION_MAX_ENTRIES": "8"})
		c := srv.Client(t)
		key := srv.Layout().Session("bob", "s").Entries
		clock := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
		at := func() time.Time { clock = clock.Add(time.Second); return clock }
		rpush(t, c, key, cogneeQA("c1", "kubernetes pods", "restart them", at()), cogneeQA("c2", "redis cluster", "three masters", at()))
		user, sess := "/v1/users/bob/search?", "/v1/users/bob/sessions/s/search?rank=relevance&"

		// not touched yet: the user-wide search does not know them
		if _, ids := hits(t, h, user, "kubernetes"); ids != "" {
			t.Fatalf("before any touch: %s", ids)
		}
		// a search of the session takes them in
		got, ids := hits(t, h, sess, "kubernetes")
		if ids != "/entry:c1" {
			t.Fatalf("session search: %s", ids)
		}
		if got[0].Time != "2026-11-24T10:00:01Z" {
			t.Fatalf("time %q, want the entry's own", got[0].Time)
		}
		if _, ids := hits(t, h, user, "masters"); ids != "s/entry:c2" {
			t.Fatalf("user search after the touch: %s", ids)
		}

		// Cognee appends again; the sidecar's next append is indexed with
		// Cognee's, right after its answer (the pod's background indexer:
		// a document never lies past the entries the index covers)
		rpush(t, c, key, cogneeQA("c3", "postgres vacuum", "nightly", at()))
		if rep := h.Do(t, "POST", "/v1/users/bob/sessions/s/entries", `{"qa_id":"s4","question":"grafana panels","answer":"ok"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, ids := hits(t, h, user, "vacuum grafana")
			if ids == "s/entry:c3,s/entry:s4" || ids == "s/entry:s4,s/entry:c3" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("c3 and s4 not indexed after the append: %q", ids)
			}
			time.Sleep(10 * time.Millisecond)
		}

		// Cognee deletes c1 (reads all, DEL, RPUSH the rest): made again
		all := lrange(t, c, key)
		c.Do(t.Context(), c.B().Del().Key(key).Build())
		rpush(t, c, key, all[1:]...)
		if _, ids := hits(t, h, sess, "kubernetes"); ids != "" {
			t.Fatalf("c1 after Cognee deleted it: %s", ids)
		}
		if _, ids := hits(t, h, sess, "masters vacuum grafana"); strings.Count(ids, "entry:") != 3 {
			t.Fatalf("the rest after the rewrite: %s", ids)
		}

		// the sidecar trims (SESSION_MAX_ENTRIES 8: at 11 entries, back to 8)
		for i := range 8 {
			if rep := h.Do(t, "POST", "/v1/users/bob/sessions/s/entries", fmt.Sprintf(`{"qa_id":"n%d","question":"filler %d","answer":"ok"}`, i, i)); rep.Status != 201 {
				t.Fatal(rep)
			}
		}
		if n := len(lrange(t, c, key)); n != 8 {
			t.Fatalf("%d entries, want 8 after the trim", n)
		}
		if _, ids := hits(t, h, user, "masters vacuum grafana"); ids != "" {
			t.Fatalf("trimmed entries found: %s", ids)
		}
		if _, ids := hits(t, h, user, "filler"); strings.Count(ids, "entry:") != 8 {
			t.Fatalf("filler: %s", ids)
		}
		if n := indexedDocs(t, srv, "bob"); n != 8 {
			t.Fatalf("%d documents indexed, want 8", n)
		}
	})
}

// SEARCH_INDEX=false leaves entries out of the index.
func TestEntriesSearchIndexOff(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, envconf.Env{"SEARCH_INDEX": "false"})
	if rep := h.Do(t, "POST", "/v1/users/a/sessions/s/entries", `{"question":"zebra","answer":"stripes"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	if _, ids := hits(t, h, "/v1/users/a/search?", "zebra"); ids != "" {
		t.Fatalf("indexed with SEARCH_INDEX=false: %s", ids)
	}
	if n := len(srv.Keys(t, "agent_search*")); n != 0 {
		t.Fatalf("%d search keys with SEARCH_INDEX=false", n)
	}
}

// A session kept alive by feedback alone, past its TTL: its entries'
// documents hash slides with the session's keys, so its entries are still
// found (the index does not expire under it).
func TestEntriesPostingsLiveWithTheSession(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := startSearch(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "4"})
	s := "/v1/users/carol/sessions/s"
	if rep := h.Do(t, "POST", s+"/entries", `{"qa_id":"q1","question":"zebra crossing","answer":"ok"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	for i := range 7 {
		time.Sleep(time.Second)
		if rep := h.Do(t, "PUT", s+"/entries/q1/feedback", fmt.Sprintf(`{"feedback_score":%d}`, i%5+1)); rep.Status != 200 {
			t.Fatalf("feedback %d: %s", i, rep)
		}
	}
	if _, ids := hits(t, h, "/v1/users/carol/search?", "zebra"); ids != "s/entry:q1" {
		t.Fatalf("after 7 s of a 4 s TTL kept alive by feedback: %q", ids)
	}
}

// A word's postings past their 2 KiB bound keep their newer half: the
// session's newest documents holding the word are still found, and the
// hash keeps hundreds of its postings, the newest last (once
// string.sub(v, string.find(...)) cut the value to its one space: every
// posting of the word went, the new document's too).
func TestSearchPostingsBoundKeepsTheNewerHalf(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, nil)
	const n = 545 // the word's postings pass 2 KiB at the 539th
	for i := 1; i <= n; i++ {
		if rep := h.Do(t, "POST", "/v1/users/u/sessions/s/entries", fmt.Sprintf(`{"qa_id":"q%d","question":"zebra","answer":"ok"}`, i)); rep.Status != 201 {
			t.Fatal(rep)
		}
	}
	res, _ := hits(t, h, "/v1/users/u/sessions/s/search?rank=relevance&limit=100&", "zebra")
	if len(res) != 100 {
		t.Errorf("%d entries found, want 100 of the session's %d", len(res), n)
	}
	v := edocs(t, srv, "u", "s")["zebra"]
	if !strings.HasPrefix(v, " ") || !strings.HasSuffix(v, " ") || len(v) > 2048 {
		t.Fatalf("postings %q: want ' num ... num ', at most 2 KiB", v)
	}
	p := strings.Fields(v)
	if len(p) < 200 || p[len(p)-1] != fmt.Sprint(n) {
		t.Errorf("%d postings ending %q, want at least 200 ending with the newest, %d", len(p), p[len(p)-1:], n)
	}
}
