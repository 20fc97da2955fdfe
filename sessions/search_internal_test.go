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

// An entries index whose ' seq' another program spoiled (not a number
// HINCRBY takes) fails no append half-way: the append answers pending
// without writing its document, and the catch-up, whether a search or
// that append reaches the session first, makes the index anew with every
// entry.
func TestSpoiledEntriesIndexIsMadeAnew(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		for _, first := range []string{"search", "append"} {
			t.Run(first, func(t *testing.T) {
				s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
				user, ctx, c := "spoiled-"+first, t.Context(), srv.Client(t)
				for i, w := range []string{"alpha", "beta", "gamma"} {
					id := "s" + strconv.Itoa(i)
					if _, _, err := s.Append(ctx, user, "s", id, qaEntry(t, id, w), search.Eager); err != nil {
						t.Fatal(err)
					}
				}
				docs := srv.Layout().SearchEntryDocs(user, "s")
				if err := c.Do(ctx, c.B().Hset().Key(docs).FieldValue().FieldValue(" seq", "x").Build()).Error(); err != nil {
					t.Fatal(err)
				}
				want := map[string]string{"alpha": "s0", "beta": "s1", "gamma": "s2"}
				if first == "append" {
					if _, pending, err := s.Append(ctx, user, "s", "s3", qaEntry(t, "s3", "delta"), search.Eager); err != nil || !pending {
						t.Fatalf("append: pending %v, %v; want pending (the index is made anew)", pending, err)
					}
					want["delta"] = "s3"
				}
				if left, err := s.CatchUp(ctx, user, "s", 8); err != nil || left {
					t.Fatalf("catch-up: left %v, %v", left, err)
				}
				for q, id := range want {
					res, err := FindForTest(t, srv, user, "", q, 10)
					if err != nil || len(res) != 1 || res[0].ID != id || !strings.Contains(res[0].Snippet, q) {
						t.Errorf("%s: %+v, %v; want %s with its snippet", q, res, err, id)
					}
				}
				if seq := field(t, srv, docs, " seq"); seq != strconv.Itoa(len(want)) {
					t.Errorf("' seq' %q, want %d: the index made anew", seq, len(want))
				}
			})
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

func appendAll(t *testing.T, s *Store, words ...string) {
	t.Helper()
	for i, w := range words {
		id := "s" + strconv.Itoa(i)
		if _, _, err := s.Append(t.Context(), "u", "s", id, qaEntry(t, id, w), search.Eager); err != nil {
			t.Fatal(err)
		}
	}
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
	return entryDoc{spec: d.Spec(), length: d.Length}
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
