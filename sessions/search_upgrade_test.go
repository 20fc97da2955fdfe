package sessions

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// A session indexed by a sidecar before the per-session index (documents
// "entry\t<qa_id>" with a version, ' v', and its postings in per-user
// keys) is dropped and taken in again by the next catch-up, whether a
// search or an append of the sidecar reaches it first: every entry is
// found, and no field of the old format is left.
func TestSearchIndexOfAnOlderSidecarIsTakenInAgain(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		for _, first := range []string{"search", "append"} {
			t.Run(first, func(t *testing.T) {
				s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
				user, ctx, c := "old-"+first, t.Context(), srv.Client(t)
				for i, w := range []string{"alpha", "beta", "gamma"} {
					id := "s" + string(rune('0'+i))
					if _, _, err := s.Append(ctx, user, "s", id, qaEntry(t, id, w), search.Eager); err != nil {
						t.Fatal(err)
					}
				}
				// what the older sidecar left: its documents under the same
				// key, its covered prefix, and a postings key of the user
				docs := srv.Layout().SearchEntryDocs(user, "s")
				cov := field(t, srv, docs, " cov")
				c.Do(ctx, c.B().Del().Key(docs).Build())
				for _, f := range [][2]string{{" v", "1764000000000000"}, {" cov", cov}, {" n", "3"},
					{"entry\ts0", "1764000000000000\t1\t1764000000000000\tabc\talpha 1\talpha"}} {
					hset(t, srv, docs, f[0], f[1])
				}
				c.Do(ctx, c.B().Zadd().Key(srv.Layout().SearchPostings(user, "alpha")).ScoreMember().ScoreMember(1, "s\tentry\ts0\t1\t1\t1").Build())
				if first == "append" {
					if _, pending, err := s.Append(ctx, user, "s", "s3", qaEntry(t, "s3", "delta"), search.Eager); err != nil || !pending {
						t.Fatalf("append: pending %v, %v; want pending (the old index is taken in again)", pending, err)
					}
				}
				if left, err := s.CatchUp(ctx, user, "s", 8); err != nil || left {
					t.Fatalf("catch-up: left %v, %v", left, err)
				}
				want := map[string]string{"alpha": "s0", "beta": "s1", "gamma": "s2"}
				if first == "append" {
					want["delta"] = "s3"
				}
				for q, id := range want {
					res, err := FindForTest(t, srv, user, "", q, 10)
					if err != nil || len(res) != 1 || res[0].ID != id || !strings.Contains(res[0].Snippet, q) {
						t.Errorf("%s: %+v, %v; want %s with its snippet", q, res, err, id)
					}
				}
				fields, err := c.Do(ctx, c.B().Hkeys().Key(docs).Build()).AsStrSlice()
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fields {
					if f == " v" || strings.HasPrefix(f, "entry\t") {
						t.Errorf("field %q of the old format left in %s", f, docs)
					}
				}
			})
		}
	})
}
