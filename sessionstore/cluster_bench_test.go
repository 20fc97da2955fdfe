package sessionstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// BenchmarkClusterVsStandalone runs the store's hot paths on a standalone
// redis-server and on a 3-master Redis Cluster (BENCHMARKS.md, "Redis
// Cluster"):
//
//		go test -run '^$' -bench ClusterVsStandalone -benchtime 2s -timeout 10m ./sessionstore/
//
//	  - append: parallel appends (GOMAXPROCS×4 goroutines), each on its own
//	    user's session, so the writes spread over the buckets;
//	  - feedback: UpdateEntry on a 500-entry session (O(1) via the qa_id index);
//	  - list-all-users: one page of 50 across users among 2 000 sessions of
//	    200 users (on the cluster: 64 shards read and merged);
//	  - stats: the counts and totals behind /v1/sessions/stats and the
//	    scrape-time gauges.
func BenchmarkClusterVsStandalone(b *testing.B) {
	for _, backend := range []string{redisstoretest.Real, redisstoretest.ClusterBackend} {
		b.Run(backend, func(b *testing.B) {
			var srv *redisstoretest.Server
			if backend == redisstoretest.Real {
				srv = redisstoretest.NewReal(b)
			} else {
				srv = redisstoretest.NewClusterServer(b)
			}
			conn := redisstoretest.OpenReady(b, srv.Options())
			store := newStores(conn, 3600)
			entryOf := func(qa string) []byte {
				return []byte(`{"time": "2026-11-21T23:15:37.123456+00:00", "qa_id": "` + qa + `", "question": "What did the report say?", "context": "", "answer": "Revenue grew 12%.", "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`)
			}
			ctx := b.Context()

			b.Run("append", func(b *testing.B) {
				var n atomic.Int64
				b.SetParallelism(4)
				b.RunParallel(func(pb *testing.PB) {
					g := n.Add(1)
					for i := 0; pb.Next(); i++ {
						qa := fmt.Sprintf("q%d", i)
						if _, _, err := store.entries.Append(ctx, fmt.Sprintf("bench-user-%d", g), "s", qa, entryOf(qa), search.Eager); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})

			for i := range 500 {
				qa := fmt.Sprintf("q%d", i)
				if _, _, err := store.entries.Append(ctx, "fb-user", "fb", qa, entryOf(qa), search.Eager); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("feedback", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := store.entries.UpdateEntry(ctx, "fb-user", "fb", fmt.Sprintf("q%d", i%500), [][2]string{{"feedback_score", "5"}}, nil); err != nil {
						b.Fatal(err)
					}
				}
			})

			for i := range 2000 {
				if _, _, err := store.entries.Append(ctx, fmt.Sprintf("list-user-%d", i%200), fmt.Sprintf("s%d", i), "q", entryOf("q"), search.Eager); err != nil {
					b.Fatal(err)
				}
			}
			q := sessionstore.ListQuery{Limit: 50, AbandonAfter: time.Hour}
			b.Run("list-all-users", func(b *testing.B) {
				for b.Loop() {
					page, _, err := store.List(ctx, q)
					if err != nil || len(page) != 50 {
						b.Fatalf("got %d sessions, %v", len(page), err)
					}
				}
			})
			b.Run("stats", func(b *testing.B) {
				for b.Loop() {
					if _, err := store.Stats(ctx, time.Hour); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
