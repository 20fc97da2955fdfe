package search

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// Searches racing a writer that deletes a session's hash and makes it
// again with other documents under the same numbers never answer a
// document by a term it does not hold, nor fail.
func TestFindRacingRewrites(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		f := newFixture(t, srv)
		variant := func(prefix string, odd string) []fdoc {
			var docs []fdoc
			for i := 1; i <= 40; i++ {
				term := "lion"
				if (i%2 == 1) == (odd == "zebra") {
					term = "zebra"
				}
				docs = append(docs, fdoc{"s", "entry", i, t0 + int64(i), prefix + strconv.Itoa(i), map[string]int{term: 1 + i%3, "pad": i % 5}})
			}
			return docs
		}
		a, b := variant("a", "zebra"), variant("b", "lion")
		holds := map[string]bool{}
		for _, d := range append(slices.Clone(a), b...) {
			if d.terms["zebra"] > 0 {
				holds[d.id] = true
			}
		}
		f.write(t, "u", map[string]int64{"s": 1}, a...)
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			defer close(done)
			for i := 0; ctx.Err() == nil; i++ {
				docs := a
				if i%2 == 1 {
					docs = b
				}
				cmds := append([]rueidis.Completed{f.c.B().Del().Key(f.l.SearchEntryDocs("u", "s")).Build()}, f.commands("u", nil, docs...)...)
				for _, r := range f.c.DoMulti(ctx, cmds...) {
					if err := r.Error(); err != nil && ctx.Err() == nil {
						done <- err
						return
					}
				}
			}
		}()
		found := 0
		for range 300 {
			res, err := f.x.Find(t.Context(), "u", "", "zebra", 50)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if !holds[r.ID] {
					t.Fatalf("found %s, which does not hold zebra", r.ID)
				}
			}
			found += len(res)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// whether the racing searches met a whole hash depends on the
		// machine's scheduling; once the writes stop, a search finds them
		// all
		t.Logf("%d results in 300 racing searches", found)
		f.do(t, f.c.B().Del().Key(f.l.SearchEntryDocs("u", "s")).Build())
		f.write(t, "u", map[string]int64{"s": 1}, a...)
		res, err := f.x.Find(t.Context(), "u", "", "zebra", 50)
		if err != nil || len(res) != 20 {
			t.Fatalf("after the writes: %d results (%v), want the 20 of a that hold zebra", len(res), err)
		}
	})
}

// A search's Redis work is bounded by what it needs, not by what the user
// holds: with every term's postings in the newest session, the 300 older
// sessions are not read (INFO commandstats on redis-server).
func TestFindCommandsBounded(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	f := newFixture(t, srv)
	listed := map[string]int64{}
	var docs []fdoc
	for i := 1; i <= 2500; i++ {
		docs = append(docs, fdoc{"new", "message", i, t0 + int64(i), "n" + strconv.Itoa(i), map[string]int{"common": 1 + i%2, "pad": i % 7}})
	}
	listed["new"] = 1000
	for s := range 300 {
		sid := "s" + strconv.Itoa(s)
		listed[sid] = int64(s)
		docs = append(docs, fdoc{sid, "entry", 1, t0, sid, map[string]int{"common": 1}})
	}
	f.write(t, "u", listed, docs...)
	hmget := func() int64 {
		info, err := f.c.Do(t.Context(), f.c.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_hmget:calls="); ok {
				n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				return n
			}
		}
		return 0
	}
	before := hmget()
	if got := f.find(t, "u", "", "common", 10); len(got) != 10 || got[0].SessionID != "new" {
		t.Fatalf("got %s", ids(got))
	}
	calls := hmget() - before
	// the first batch of sessions, and the records in pipelines of
	// RecordBatch (one hash)
	if limit := int64(2*SessionBatch + MaxPostings/RecordBatch + 1); calls > limit {
		t.Fatalf("%d HMGETs, want at most %d (300 sessions not read)", calls, limit)
	}
	t.Logf("%d HMGETs", calls)
}

// With limit MaxSnippets and the best item gone, every result has its
// snippet (the spare taken in its place too); past MaxSnippets results
// have none.
func TestFindSnippetsUpToMax(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		f := newFixture(t, srv)
		var docs []fdoc
		for i := 1; i <= 2*MaxSnippets; i++ {
			docs = append(docs, fdoc{"s", "entry", i, t0 + int64(i), "e" + strconv.Itoa(i), map[string]int{"deploy": 1, "pad": 2*MaxSnippets + 1 - i}})
		}
		f.write(t, "u", map[string]int64{"s": 1}, docs...)
		best := "e" + strconv.Itoa(2*MaxSnippets)
		f.x.RegisterTexts("entry", func(_ context.Context, _, _ string, ids []string) (map[string][]string, error) {
			out := map[string][]string{}
			for _, id := range ids {
				if id != best {
					out[id] = []string{"deploy " + id}
				}
			}
			return out, nil
		})
		got := f.find(t, "u", "", "deploy", MaxSnippets)
		if len(got) != MaxSnippets || got[0].ID == best {
			t.Fatalf("got %d: %s", len(got), ids(got))
		}
		for _, r := range got {
			if r.Snippet != "deploy "+r.ID {
				t.Fatalf("%s: snippet %q", r.ID, r.Snippet)
			}
		}
		got = f.find(t, "u", "", "deploy", 2*MaxSnippets)
		if len(got) != 2*MaxSnippets-1 || got[MaxSnippets-1].Snippet == "" || got[MaxSnippets+4].Snippet != "" {
			t.Fatalf("got %d, snippets %q %q", len(got), got[MaxSnippets-1].Snippet, got[MaxSnippets+4].Snippet)
		}
	})
}
