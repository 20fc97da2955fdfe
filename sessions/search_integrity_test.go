package sessions_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// indexedDocs is how many documents the user's relevance index holds: the
// ' n' of both hashes (entries, messages) of each session the user's
// sessions list (agent_search_sessions) names.
func indexedDocs(t *testing.T, srv *redisstoretest.Server, user string) int {
	t.Helper()
	c, l := srv.Client(t), srv.Layout()
	sids, err := c.Do(t.Context(), c.B().Zrange().Key(l.SearchSessions(user)).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("the user's search sessions: %v", err)
	}
	n := 0
	for _, s := range sids {
		for _, k := range []string{l.SearchEntryDocs(user, s), l.SearchDocs(user, s)} {
			v, err := c.Do(t.Context(), c.B().Hget().Key(k).Field(" n").Build()).ToString()
			if rueidis.IsRedisNil(err) {
				continue
			}
			d, cerr := strconv.Atoi(v)
			if err != nil || cerr != nil {
				t.Fatalf("' n' of %s: %q %v %v", k, v, err, cerr)
			}
			n += d
		}
	}
	return n
}

func edocs(t *testing.T, srv *redisstoretest.Server, user, s string) map[string]string {
	c := srv.Client(t)
	m, _ := c.Do(t.Context(), c.B().Hgetall().Key(srv.Layout().SearchEntryDocs(user, s)).Build()).AsStrMap()
	return m
}

// The integrity of the entries' search index when Cognee and the sidecar
// both write a session: each of these once went wrong (reproduced here on
// a real redis-server).

// Cognee deletes the last entry of a session (DEL, RPUSH of none): the
// session's documents go at its next touch: the user's index counts none.
func TestSearchCogneeDeletesEveryEntry(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, nil)
	if rep := h.Do(t, "POST", "/v1/users/u/sessions/s/entries", `{"qa_id":"q1","question":"zebra stripes","answer":"ok"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	c := srv.Client(t)
	key := srv.Layout().Session("u", "s").Entries
	c.Do(t.Context(), c.B().Del().Key(key).Build()) // Cognee deletes q1, the only entry
	_, ids := hits(t, h, "/v1/users/u/sessions/s/search?rank=relevance&", "zebra")
	_, ids2 := hits(t, h, "/v1/users/u/search?", "zebra")
	if n := indexedDocs(t, srv, "u"); ids != "" || ids2 != "" || n != 0 {
		t.Errorf("deleted entry still found: session search %q, user search %q, %d documents indexed", ids, ids2, n)
	}
}

// A trim in the same append as an unseen rewrite by Cognee drops the
// documents (the index no longer described the list) instead of starting
// the covered prefix again over them: the entry Cognee deleted is not
// found, and the index counts what the list holds.
func TestSearchTrimAfterRewrite(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, envconf.Env{"SESSION_MAX_ENTRIES": "8"})
	post := func(id, q string) {
		t.Helper()
		if rep := h.Do(t, "POST", "/v1/users/u/sessions/s/entries", fmt.Sprintf(`{"qa_id":%q,"question":%q,"answer":"ok"}`, id, q)); rep.Status != 201 {
			t.Fatal(rep)
		}
	}
	post("e1", "zebra")
	post("e2", "giraffe")
	c := srv.Client(t)
	key := srv.Layout().Session("u", "s").Entries
	all := lrange(t, c, key)
	// Cognee deletes e1 (DEL + RPUSH the rest), then appends c3..c11
	c.Do(t.Context(), c.B().Del().Key(key).Build())
	rpush(t, c, key, all[1:]...)
	clock := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for i := 3; i <= 11; i++ {
		clock = clock.Add(time.Second)
		rpush(t, c, key, cogneeQA(fmt.Sprintf("c%d", i), fmt.Sprintf("filler%d", i), "ok", clock))
	}
	post("s12", "hippo") // 11 entries: trimmed back to 8 in this script
	_, ids := hits(t, h, "/v1/users/u/sessions/s/search?rank=relevance&", "zebra")
	if ids != "" {
		t.Errorf("e1 (deleted by Cognee) still found: %s", ids)
	}
	if n := indexedDocs(t, srv, "u"); n != 8 {
		t.Errorf("%d documents indexed, want 8", n)
	}
}

// The sidecar deletes the entry at the covered prefix's end after Cognee
// rewrote the list: the prefix is not re-fingerprinted from the list as it
// is now, so the rewrite is still seen and the entry Cognee deleted goes.
func TestSearchDeleteAfterRewrite(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, nil)
	post := func(id, q string) {
		t.Helper()
		if rep := h.Do(t, "POST", "/v1/users/u/sessions/s/entries", fmt.Sprintf(`{"qa_id":%q,"question":%q,"answer":"ok"}`, id, q)); rep.Status != 201 {
			t.Fatal(rep)
		}
	}
	for i, w := range []string{"alpha", "zebra", "gamma", "delta", "omega"} {
		post(fmt.Sprintf("e%d", i+1), w)
	}
	c := srv.Client(t)
	key := srv.Layout().Session("u", "s").Entries
	all := lrange(t, c, key)
	// Cognee deletes e2 (zebra), then appends c6
	c.Do(t.Context(), c.B().Del().Key(key).Build())
	rpush(t, c, key, append([]string{all[0]}, all[2:]...)...)
	rpush(t, c, key, cogneeQA("c6", "kiwi", "ok", time.Now()))
	// the sidecar deletes c6 (position 4 = the covered prefix's last)
	if rep := h.Do(t, "DELETE", "/v1/users/u/sessions/s/entries/c6", ""); rep.Status != 204 {
		t.Fatal(rep)
	}
	_, ids := hits(t, h, "/v1/users/u/sessions/s/search?rank=relevance&", "zebra")
	if ids != "" {
		t.Errorf("e2 (deleted by Cognee) still found: %s", ids)
	}
}

// Documents made again after a rewrite hold the entries' text as it is: an
// entry whose text a PATCH changed (same entry, same "time") is found by
// its new words only.
func TestSearchRebuildAfterPatch(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, nil)
	if rep := h.Do(t, "POST", "/v1/users/u/sessions/s/entries", `{"qa_id":"q1","question":"billing service","answer":"ok"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	if rep := h.Do(t, "POST", "/v1/users/u/sessions/s/entries", `{"qa_id":"q2","question":"weather","answer":"ok"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	if rep := h.Do(t, "PATCH", "/v1/users/u/sessions/s/entries/q1", `{"question":"invoices"}`); rep.Status != 200 {
		t.Fatal(rep)
	}
	c := srv.Client(t)
	key := srv.Layout().Session("u", "s").Entries
	all := lrange(t, c, key)
	// Cognee deletes q2 (DEL + RPUSH of q1)
	c.Do(t.Context(), c.B().Del().Key(key).Build())
	rpush(t, c, key, all[0])
	_, ids := hits(t, h, "/v1/users/u/sessions/s/search?rank=relevance&", "invoices") // catch-up restarts
	_, ids2 := hits(t, h, "/v1/users/u/search?", "billing")
	if ids2 != "" || ids != "/entry:q1" {
		t.Errorf("q1 found by a word it no longer holds (%q), or not by its new one (%q)", ids2, ids)
	}
}

// A catch-up (a search, not activity) gives the documents the entries
// list's remaining TTL, not a whole new one: they do not outlive it.
func TestSearchCatchupKeepsTheListsTTL(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "3600"})
	c := srv.Client(t)
	key := srv.Layout().Session("u", "s").Entries
	rpush(t, c, key, cogneeQA("c1", "zebra", "ok", time.Now()))
	c.Do(t.Context(), c.B().Expire().Key(key).Seconds(2).Build()) // Cognee's list about to expire
	hits(t, h, "/v1/users/u/sessions/s/search?rank=relevance&", "zebra")
	docs := srv.Layout().SearchEntryDocs("u", "s")
	pl, _ := c.Do(t.Context(), c.B().Pttl().Key(key).Build()).AsInt64()
	pd, _ := c.Do(t.Context(), c.B().Pttl().Key(docs).Build()).AsInt64()
	if pd > pl+100 || pd <= 0 {
		t.Errorf("list PTTL %d ms, entry docs PTTL %d ms: want about the list's", pl, pd)
	}
	time.Sleep(2500 * time.Millisecond)
	_, ids := hits(t, h, "/v1/users/u/search?", "zebra")
	ex, _ := c.Do(t.Context(), c.B().Exists().Key(key).Build()).AsInt64()
	if ex == 0 && ids != "" {
		t.Errorf("an entry of an expired list is found: %s", ids)
	}
}

// A trim of more than 256 entries drops the session's entry documents (it
// cannot read them all in one step) and says so: the pod's background
// indexer makes them again, and the entries left are found.
func TestSearchBigTrimIndexesAgain(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, envconf.Env{"SESSION_MAX_ENTRIES": "1100"})
	c := srv.Client(t)
	key := srv.Layout().Session("u", "s").Entries
	clock := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	var els []string
	for i := range 1375 {
		clock = clock.Add(time.Second)
		els = append(els, cogneeQA(fmt.Sprintf("c%d", i), fmt.Sprintf("word%d zebra", i), "ok", clock))
	}
	rpush(t, c, key, els...)
	hits(t, h, "/v1/users/u/sessions/s/search?rank=relevance&", "zebra")
	if rep := h.Do(t, "POST", "/v1/users/u/sessions/s/entries", `{"qa_id":"s1","question":"hippo","answer":"ok"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	if n := len(lrange(t, c, key)); n != 1100 {
		t.Fatalf("%d entries after the trim, want 1100", n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		// a session search takes in 16 steps more (the append's background
		// catch-up took 16)
		_, ids := hits(t, h, "/v1/users/u/sessions/s/search?rank=relevance&", "word1374")
		_, gone := hits(t, h, "/v1/users/u/search?", "word3")
		n := indexedDocs(t, srv, "u")
		if ids == "/entry:c1374" && gone == "" && n == 1100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the trimming append: word1374 -> %q, word3 -> %q, %d documents indexed", ids, gone, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Deleting a session whose entries were all deleted: its documents' counts
// are 0, and Lua's minus zero ("-0") must never reach HINCRBY (the delete
// failed half-way).
func TestSearchDeleteSessionAfterEntryDelete(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, nil)
	b := "/v1/users/u/sessions/s"
	if rep := h.Do(t, "POST", b+"/entries", `{"qa_id":"q1","question":"zebra","answer":"ok"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	if rep := h.Do(t, "DELETE", b+"/entries/q1", ""); rep.Status != 204 {
		t.Fatal(rep)
	}
	rep := h.Do(t, "DELETE", b, "")
	c := srv.Client(t)
	ex, _ := c.Do(t.Context(), c.B().Exists().Key(srv.Layout().Session("u", "s").Record).Build()).AsInt64()
	zs, _ := c.Do(t.Context(), c.B().Zcard().Key(srv.Layout().Session("u", "s").UserIndex[0]).Build()).AsInt64()
	if rep.Status != 204 || ex != 0 || zs != 0 {
		t.Errorf("DELETE session: %d %s; record exists %d; running set %d", rep.Status, rep.Body, ex, zs)
	}
}

// Every key the index writes has a TTL, whatever mix of writes made it.
func TestSearchKeysHaveTTL(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, envconf.Env{"SESSION_MAX_ENTRIES": "8"})
	c := srv.Client(t)
	b := "/v1/users/u/sessions/s"
	key := srv.Layout().Session("u", "s").Entries
	// a Cognee-only session first, searched
	rpush(t, c, key, cogneeQA("c0", "the", "a", time.Now()), cogneeQA("c1", "zebra", "ok", time.Now()))
	hits(t, h, b+"/search?rank=relevance&", "zebra")
	for i := range 12 {
		h.Do(t, "POST", b+"/entries", fmt.Sprintf(`{"qa_id":"q%d","question":"the","answer":"a"}`, i))
		h.Do(t, "POST", b+"/entries", fmt.Sprintf(`{"qa_id":"r%d","question":"word%d","answer":"ok"}`, i, i))
		rpush(t, c, key, cogneeQA(fmt.Sprintf("k%d", i), "kiwi", "ok", time.Now()))
	}
	h.Do(t, "PATCH", b+"/entries/r11", `{"question":"tiger"}`)
	h.Do(t, "DELETE", b+"/entries/r10", "")
	hits(t, h, b+"/search?rank=relevance&", "zebra")
	for _, k := range srv.Keys(t, "*") {
		p, _ := c.Do(t.Context(), c.B().Pttl().Key(k).Build()).AsInt64()
		// the status and expiry sets have none by design (members leave them)
		if p == -1 && k != key && !strings.HasPrefix(k, "agent_sessions_global:") && !strings.HasPrefix(k, "agent_sessions_by_user:") {
			t.Errorf("no TTL: %s", k)
		}
	}
}

// One catch-up step writes at most MaxStepTerms terms' postings, however
// many words the entries hold (Redis's own record, MONITOR, counts the
// writes of term fields of the session's hash).
func TestCatchupStepIsBounded(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	s := sessions.NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
	ctx := context.Background()
	c := srv.Client(t)
	key := srv.Layout().Session("u", "s").Entries
	for i := range 100 {
		var words []string
		for j := range 300 {
			words = append(words, fmt.Sprintf("w%dx%d", i%7, j))
		}
		if err := c.Do(ctx, c.B().Rpush().Key(key).Element(cogneeRaw("c"+strconv.Itoa(i), strings.Join(words, " "))).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	mon := newMonitor(t, srv)
	left, err := s.CatchUp(ctx, "u", "s", 1)
	if err != nil || !left {
		t.Fatalf("one step: left %v, %v; want entries left", left, err)
	}
	// a term's postings are the field named by the term in the session's
	// hash ('#<num>' records, '=<id>' numbers and ' n'-like counts aside)
	written, docs := 0, redisstore.Layout{}.SearchEntryDocs("u", "s")
	for _, script := range mon.mark() {
		for _, cmd := range script.inner {
			if (cmd.name != "hset" && cmd.name != "hdel") || len(cmd.args) < 2 || cmd.args[0] != docs {
				continue
			}
			step := 2 // HSET field value ...
			if cmd.name == "hdel" {
				step = 1
			}
			for i := 1; i < len(cmd.args); i += step {
				if f := cmd.args[i]; f != "" && !strings.ContainsAny(f[:1], "#= ") {
					written++
				}
			}
		}
	}
	// at most MaxStepTerms, or one whole document (search.MaxDocTerms)
	if most := max(sessions.MaxStepTerms, search.MaxDocTerms); written == 0 || written > most {
		t.Fatalf("one step wrote %d terms' postings, want 1..%d", written, most)
	}
	// and the steps go on to the end
	for left && err == nil {
		left, err = s.CatchUp(ctx, "u", "s", 16)
	}
	if err != nil || userHits(t, srv, "w6x299") == "" {
		t.Fatalf("after every step: %v, w6x299 -> %q", err, userHits(t, srv, "w6x299"))
	}
}

func userHits(t *testing.T, srv *redisstoretest.Server, q string) string {
	t.Helper()
	res, err := sessions.FindForTest(t, srv, "u", "", q, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range res {
		ids = append(ids, r.SessionID+"/"+r.ID)
	}
	return strings.Join(ids, ",")
}

func cogneeRaw(id, question string) string {
	return fmt.Sprintf(`{"time": "2026-11-24T10:00:00.000000", "question": %q, "context": "", "answer": "ok", "qa_id": %q, "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`, question, id)
}
