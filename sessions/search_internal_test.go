package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

func findIDs(t *testing.T, srv *redisstoretest.Server, q string) string {
	t.Helper()
	res, err := FindForTest(t, srv, "u", "", q, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range res {
		ids = append(ids, r.SessionID+"/"+r.ID)
	}
	return strings.Join(ids, ",")
}

func qaEntry(t *testing.T, id, q string) []byte {
	t.Helper()
	e, err := cognee.NewQAEntry(cognee.QAFields{Question: json.RawMessage(strconv.Quote(q)), Answer: json.RawMessage(`"ok"`)}, id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func cogneeRaw(id, question string) string {
	return fmt.Sprintf(`{"time": "2026-11-24T10:00:00.000000", "question": %q, "context": "", "answer": "ok", "qa_id": %q, "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`, question, id)
}

// A PATCH (and its re-index) between a catch-up's read and its write: the
// write finds the entry's bytes changed and stores nothing, and the next
// step indexes the PATCH's text, never the one read before it.
func TestCatchupRacingAPatchStoresNothing(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		ctx := context.Background()
		if _, _, err := s.Append(ctx, "u", "s", "s1", qaEntry(t, "s1", "alpha"), search.Eager); err != nil {
			t.Fatal(err)
		}
		c := srv.Client(t)
		key := srv.Layout().Session("u", "s").Entries
		if err := c.Do(ctx, c.B().Rpush().Key(key).Element(cogneeRaw("c1", "zebra")).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		args, err := s.catchupRead(ctx, "u", "s")
		if err != nil || args == nil {
			t.Fatalf("read: %v %v", args, err)
		}
		upd, err := s.UpdateEntry(ctx, "u", "s", "c1", [][2]string{{"question", `"giraffe"`}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReindexEntry(ctx, "u", "s", "c1", upd); err != nil {
			t.Fatal(err)
		}
		stored, _, err := s.catchupWrite(ctx, "u", "s", args)
		if err != nil || stored {
			t.Fatalf("write after the PATCH: stored %v, %v; want nothing stored", stored, err)
		}
		if left, err := s.CatchUp(ctx, "u", "s", 4); err != nil || left {
			t.Fatalf("catch-up: left %v, %v", left, err)
		}
		if z, g := findIDs(t, srv, "zebra"), findIDs(t, srv, "giraffe"); z != "" || g != "s/c1" {
			t.Fatalf("zebra %q, giraffe %q: want the PATCH's text only", z, g)
		}
	})
}

func field(t *testing.T, srv *redisstoretest.Server, key, f string) string {
	t.Helper()
	c := srv.Client(t)
	v, err := c.Do(t.Context(), c.B().Hget().Key(key).Field(f).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	return v
}

func hset(t *testing.T, srv *redisstoretest.Server, key, f, v string) {
	t.Helper()
	c := srv.Client(t)
	if err := c.Do(t.Context(), c.B().Hset().Key(key).FieldValue().FieldValue(f, v).Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

func appendAll(t *testing.T, s *Store, words ...string) {
	t.Helper()
	for i, w := range words {
		id := "s" + strconv.Itoa(i)
		if _, _, err := s.Append(t.Context(), "u", "s", id, qaEntry(t, id, w), search.Eager); err != nil {
			t.Fatal(err)
		}
	}
}

// A text PATCH whose re-index never ran (the request died) keeps the old
// document, never none; the session's next refresh (its index half a TTL
// old) writes the new one.
func TestLostReindexIsRedoneByTheRefresh(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		ctx := context.Background()
		appendAll(t, s, "alpha", "beta", "gamma")
		if _, err := s.UpdateEntry(ctx, "u", "s", "s1", [][2]string{{"question", `"zebra"`}}, nil); err != nil {
			t.Fatal(err)
		}
		if b, z := findIDs(t, srv, "beta"), findIDs(t, srv, "zebra"); b != "s/s1" || z != "" {
			t.Fatalf("before the refresh: beta %q, zebra %q; want the old document kept", b, z)
		}
		docs := srv.Layout().SearchEntryDocs("u", "s")
		hset(t, srv, docs, " since", "1") // began long ago: a refresh is due
		if left, err := s.CatchUp(ctx, "u", "s", 4); err != nil || left {
			t.Fatalf("refresh: left %v, %v", left, err)
		}
		if b, z, g := findIDs(t, srv, "beta"), findIDs(t, srv, "zebra"), findIDs(t, srv, "gamma"); b != "" || z != "s/s1" || g != "s/s2" {
			t.Fatalf("after the refresh: beta %q, zebra %q, gamma %q", b, z, g)
		}
		if field(t, srv, docs, " since") == "1" || field(t, srv, docs, " refresh") != "" {
			t.Fatalf("after the refresh: since %q, refresh %q", field(t, srv, docs, " since"), field(t, srv, docs, " refresh"))
		}
	})
}

// A refresh writes the same postings again (same version): five refreshes
// leave one posting per word, and the document as it was.
func TestRefreshAddsNoPostings(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		appendAll(t, s, "alpha", "beta", "gamma")
		c := srv.Client(t)
		docs, postings := srv.Layout().SearchEntryDocs("u", "s"), srv.Layout().SearchPostings("u", "gamma")
		doc := field(t, srv, docs, "entry\ts2")
		for range 5 {
			hset(t, srv, docs, " since", "1")
			if left, err := s.CatchUp(t.Context(), "u", "s", 4); err != nil || left {
				t.Fatalf("refresh: left %v, %v", left, err)
			}
		}
		if n, err := c.Do(t.Context(), c.B().Zcard().Key(postings).Build()).AsInt64(); err != nil || n != 1 {
			t.Fatalf("ZCARD %s = %d (%v), want 1", postings, n, err)
		}
		if got := field(t, srv, docs, "entry\ts2"); got != doc {
			t.Fatalf("document %q, want it unchanged %q", got, doc)
		}
	})
}

// A refresh walk cut short, then the list shrinks under it: the walk ends
// (its mark goes) instead of staying "under way" for good.
func TestRefreshWalkEndsWhenTheListShrinks(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		appendAll(t, s, "alpha", "beta", "gamma")
		docs := srv.Layout().SearchEntryDocs("u", "s")
		hset(t, srv, docs, " refresh", "1") // as a walk left it, the prefix at the list's end
		if left, err := s.CatchUp(t.Context(), "u", "s", 1); err != nil || left {
			t.Fatalf("catch-up: left %v, %v", left, err)
		}
		if got := field(t, srv, docs, " refresh"); got != "" {
			t.Fatalf("refresh mark %q left after the walk's end", got)
		}
		if _, pending, err := s.Append(t.Context(), "u", "s", "s9", qaEntry(t, "s9", "delta"), search.Eager); err != nil || pending {
			t.Fatalf("append after: pending %v, %v; want nothing pending", pending, err)
		}
	})
}

// Entries already indexed do not restart the refresh clock: a walk from
// the first entry that wrote nothing leaves ' since' as it was.
func TestSkippingWalkKeepsTheRefreshClock(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		appendAll(t, s, "alpha", "beta", "gamma")
		docs := srv.Layout().SearchEntryDocs("u", "s")
		since := strconv.FormatInt(time.Now().Add(-290*time.Second).UnixMicro(), 10)
		hset(t, srv, docs, " since", since)
		hset(t, srv, docs, " cov", "0\t") // as a trim of the whole covered prefix leaves it
		if left, err := s.CatchUp(t.Context(), "u", "s", 1); err != nil || left {
			t.Fatalf("catch-up: left %v, %v", left, err)
		}
		if got := field(t, srv, docs, " since"); got != since {
			t.Fatalf("since %q, want %q kept", got, since)
		}
	})
}

// Cognee deletes an entry after a text PATCH of another: no document is
// left of the deleted one (none ever lies past the covered prefix, and a
// prefix that no longer describes the list is made again).
func TestNoDocumentOutlivesItsEntry(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		ctx := context.Background()
		appendAll(t, s, "alpha", "beta", "gamma")
		upd, err := s.UpdateEntry(ctx, "u", "s", "s0", [][2]string{{"answer", `"zebra"`}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReindexEntry(ctx, "u", "s", "s0", upd); err != nil {
			t.Fatal(err)
		}
		c := srv.Client(t)
		key := srv.Layout().Session("u", "s").Entries
		all, err := c.Do(ctx, c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		c.Do(ctx, c.B().Del().Key(key).Build())
		c.Do(ctx, c.B().Rpush().Key(key).Element(all[:2]...).Build())
		// and a Cognee append the sidecar's next append finds
		c.Do(ctx, c.B().Rpush().Key(key).Element(cogneeRaw("c3", "kiwi")).Build())
		if _, _, err := s.Append(ctx, "u", "s", "s4", qaEntry(t, "s4", "mango"), search.Eager); err != nil {
			t.Fatal(err)
		}
		if left, err := s.CatchUp(ctx, "u", "s", 4); err != nil || left {
			t.Fatalf("catch-up: left %v, %v", left, err)
		}
		for q, want := range map[string]string{"gamma": "", "zebra": "s/s0", "beta": "s/s1", "kiwi": "s/c3", "mango": "s/s4"} {
			if got := findIDs(t, srv, q); got != want {
				t.Errorf("%s: %q, want %q", q, got, want)
			}
		}
		if n := field(t, srv, srv.Layout().SearchEntryDocs("u", "s"), " n"); n != "4" {
			t.Errorf("documents %s, want 4", n)
		}
	})
}

// A catch-up of a list without expiry (Cognee's RPUSH before its EXPIRE)
// gives the documents' hash the session's TTL, even when no entry holds a
// searchable word (the hash then holds only the covered prefix).
func TestCatchupDocumentsGetATTL(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		c := srv.Client(t)
		key := srv.Layout().Session("u", "s").Entries
		blank := strings.ReplaceAll(cogneeRaw("c0", "the"), `"answer": "ok"`, `"answer": "a"`)
		c.Do(t.Context(), c.B().Rpush().Key(key).Element(blank).Build())
		if left, err := s.CatchUp(t.Context(), "u", "s", 1); err != nil || left {
			t.Fatalf("catch-up: left %v, %v", left, err)
		}
		docs := srv.Layout().SearchEntryDocs("u", "s")
		if p, err := c.Do(t.Context(), c.B().Pttl().Key(docs).Build()).AsInt64(); err != nil || p <= 0 {
			t.Fatalf("PTTL %s = %d (%v), want a TTL", docs, p, err)
		}
	})
}

// A refresh walk cut short, then another program deletes an entry past its
// cursor: the covered prefix never moved back, so the delete is seen and
// the entry's document goes.
func TestRefreshWalkSeesARewrite(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		ctx := context.Background()
		words := make([]string, 70)
		for i := range words {
			words[i] = "word" + strconv.Itoa(i)
		}
		appendAll(t, s, words...)
		docs := srv.Layout().SearchEntryDocs("u", "s")
		hset(t, srv, docs, " since", "1")
		if left, err := s.CatchUp(ctx, "u", "s", 1); err != nil || !left {
			t.Fatalf("first refresh step: left %v, %v; want more", left, err)
		}
		if got := field(t, srv, docs, " refresh"); !strings.HasPrefix(got, strconv.Itoa(StepEntries)+"\t") {
			t.Fatalf("refresh cursor %q after one step", got)
		}
		c := srv.Client(t)
		key := srv.Layout().Session("u", "s").Entries
		all, err := c.Do(ctx, c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		c.Do(ctx, c.B().Del().Key(key).Build()) // Cognee deletes s67
		c.Do(ctx, c.B().Rpush().Key(key).Element(append(all[:67:67], all[68:]...)...).Build())
		for left := true; left; {
			if left, err = s.CatchUp(ctx, "u", "s", 16); err != nil {
				t.Fatal(err)
			}
		}
		if got := findIDs(t, srv, "word67"); got != "" {
			t.Fatalf("word67 after Cognee deleted s67: %q", got)
		}
		if got := findIDs(t, srv, "word69"); got != "s/s69" {
			t.Fatalf("word69: %q", got)
		}
		if n := field(t, srv, docs, " n"); n != "69" {
			t.Fatalf("documents %s, want 69", n)
		}
	})
}

// A refresh tells a changed document by the digest of its words, not its
// length and preview: a long entry whose text changed past its preview
// (same word count), its re-index lost, is indexed anew.
func TestRefreshSeesAChangePastThePreview(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		ctx := context.Background()
		long := strings.Repeat("filler ", 150)
		appendAll(t, s, "alpha", long+"oldword")
		if _, err := s.UpdateEntry(ctx, "u", "s", "s1", [][2]string{{"question", strconv.Quote(long + "newword")}}, nil); err != nil {
			t.Fatal(err)
		}
		hset(t, srv, srv.Layout().SearchEntryDocs("u", "s"), " since", "1")
		if left, err := s.CatchUp(ctx, "u", "s", 4); err != nil || left {
			t.Fatalf("refresh: left %v, %v", left, err)
		}
		if o, n := findIDs(t, srv, "oldword"), findIDs(t, srv, "newword"); o != "" || n != "s/s1" {
			t.Fatalf("after the refresh: oldword %q, newword %q", o, n)
		}
	})
}

// The sidecar appends while the index lags behind Cognee's entries, then
// Cognee deletes that append: it left no document behind (an append is
// indexed only when the covered prefix reaches it).
func TestLaggingAppendLeavesNoDocument(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		ctx := context.Background()
		appendAll(t, s, "alpha", "beta")
		c := srv.Client(t)
		key := srv.Layout().Session("u", "s").Entries
		c.Do(ctx, c.B().Rpush().Key(key).Element(cogneeRaw("c2", "kiwi")).Build())
		if _, pending, err := s.Append(ctx, "u", "s", "s3", qaEntry(t, "s3", "mango"), search.Eager); err != nil || !pending {
			t.Fatalf("append behind Cognee's: pending %v, %v; want pending", pending, err)
		}
		all, err := c.Do(ctx, c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		c.Do(ctx, c.B().Del().Key(key).Build()) // Cognee deletes s3
		c.Do(ctx, c.B().Rpush().Key(key).Element(all[:3]...).Build())
		if left, err := s.CatchUp(ctx, "u", "s", 4); err != nil || left {
			t.Fatalf("catch-up: left %v, %v", left, err)
		}
		if m, k := findIDs(t, srv, "mango"), findIDs(t, srv, "kiwi"); m != "" || k != "s/c2" {
			t.Fatalf("mango %q (deleted), kiwi %q", m, k)
		}
	})
}

// A document written by an older sidecar, without the digest of its words
// ("ver \t length \t time \t preview"), is still found, with its snippet,
// and its postings are kept.
func TestDocumentWithoutDigestIsFound(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		appendAll(t, s, "zebra crossing")
		docs := srv.Layout().SearchEntryDocs("u", "s")
		f := strings.SplitN(field(t, srv, docs, "entry\ts0"), "\t", 5)
		if len(f) != 5 {
			t.Fatalf("document %q: want 5 fields", f)
		}
		hset(t, srv, docs, "entry\ts0", strings.Join([]string{f[0], f[1], f[2], f[4]}, "\t"))
		res, err := FindForTest(t, srv, "u", "", "zebra", 10)
		if err != nil || len(res) != 1 || res[0].ID != "s0" || !strings.Contains(res[0].Snippet, "zebra") || strings.Contains(res[0].Snippet, "\t") {
			t.Fatalf("search: %+v, %v", res, err)
		}
		c := srv.Client(t)
		if n, err := c.Do(t.Context(), c.B().Zcard().Key(srv.Layout().SearchPostings("u", "zebra")).Build()).AsInt64(); err != nil || n != 1 {
			t.Fatalf("postings %d (%v), want 1 kept", n, err)
		}
	})
}

// analyseSlow is analyseEntry through the decoder only: the fast path must
// give the same documents.
func analyseSlow(stored []byte) entryDoc {
	var out []string
	if strict, err := cognee.Strict(stored); err == nil {
		var e map[string]json.RawMessage
		if json.Unmarshal(strict, &e) == nil {
			for _, f := range []string{"question", "context", "answer"} {
				var s string
				if json.Unmarshal(e[f], &s) == nil && s != "" {
					out = append(out, s)
				}
			}
		}
	}
	d := search.Analyze(out...)
	return entryDoc{spec: d.Spec(), length: d.Length, preview: search.Preview(out...)}
}

// The sidecar's own entries, as cognee.NewQAEntry writes them, give the
// same document by both paths (analyse_fuzz_test.go has the other inputs).
func TestAnalyseEntryPathsAgree(t *testing.T) {
	for _, q := range []string{"plain", "with \"quotes\" and \\ backslash", "émoji 🦊 and tabs\there", strings.Repeat("long text ", 200)} {
		e := qaEntry(t, "q1", q)
		if got, want := analyseEntry(e), analyseSlow(e); got != want {
			t.Errorf("%s:\n fast %+v\n slow %+v", e, got, want)
		}
	}
}
