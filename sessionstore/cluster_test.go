package sessionstore_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/usage"
)

// stores is the shared session runner with the writes of the modules that
// use it, for tests of reads across sessions.
type stores struct {
	*sessionstore.Store
	entries *sessions.Store
	usage   *usage.Store
}

func newStores(conn *redisstore.Conn, ttlSeconds int) stores {
	s := sessionstore.New(conn, sessionstore.Config{TTLSeconds: ttlSeconds, AbandonAfterSeconds: 1800})
	return stores{Store: s, entries: sessions.NewStore(s), usage: &usage.Store{Store: s}}
}

// Listing across users, stats and cost by model read every shard and merge:
// on a cluster, sessions of many users (spread over the buckets and the
// masters) page out exactly once each in (activity desc, member desc) order,
// and the sums match what was written.
func TestReadsAcrossUsersMergeEveryShard(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		conn := redisstoretest.OpenReady(t, srv.Options())
		store := newStores(conn, 600)
		ctx := t.Context()
		const users, per = 37, 3
		written := 0
		for u := range users {
			for s := range per {
				user, session := fmt.Sprintf("u%d", u), fmt.Sprintf("s%d", s)
				if _, err := store.usage.AddUsage(ctx, user, session, usage.Usage{Model: fmt.Sprintf("m%d", u%3), TokensIn: 10, TokensOut: 1, CostNanoUSD: 7}); err != nil {
					t.Fatal(err)
				}
				written++
				if s == 1 {
					if _, err := store.usage.End(ctx, user, session, sessionstore.StatusCompleted, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if srv.Cluster != nil {
			masters, err := srv.Cluster.Masters(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range masters {
				if n, _ := srv.Cluster.Do(ctx, m, "DBSIZE").AsInt64(); n == 0 {
					t.Fatalf("master %s holds no key: the buckets do not spread", m)
				}
			}
		}
		for _, status := range []string{"", sessionstore.StatusRunning, sessionstore.StatusCompleted} {
			var got []sessionstore.SessionState
			cursor := ""
			for pages := 0; ; pages++ {
				page, next, err := store.List(ctx, sessionstore.ListQuery{Status: status, Limit: 7, Cursor: cursor, AbandonAfter: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page...)
				if next == "" {
					break
				}
				cursor = next
				if pages > 100 {
					t.Fatal("pagination does not end")
				}
			}
			want := written
			switch status {
			case sessionstore.StatusRunning:
				want = users * (per - 1)
			case sessionstore.StatusCompleted:
				want = users
			}
			seen := map[string]bool{}
			for i, s := range got {
				id := s.UserID + ":" + s.SessionID
				if seen[id] {
					t.Fatalf("status %q: %s listed twice", status, id)
				}
				seen[id] = true
				if i > 0 && got[i-1].LastActivityAt < s.LastActivityAt {
					t.Fatalf("status %q: not newest first at %d", status, i)
				}
			}
			if len(got) != want {
				t.Fatalf("status %q: %d sessions listed, want %d", status, len(got), want)
			}
		}
		st, err := store.Stats(ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if st.Running != users*(per-1) || st.Completed != users || st.TokensIn != int64(10*written) || st.CostNanoUSD != int64(7*written) || st.Calls != int64(written) {
			t.Fatalf("stats %+v", st)
		}
		by, err := store.CostByModel(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		var calls []int64
		for _, m := range by {
			calls = append(calls, m.Calls)
		}
		sort.Slice(calls, func(i, j int) bool { return calls[i] < calls[j] })
		if len(by) != 3 || calls[0]+calls[1]+calls[2] != int64(written) {
			t.Fatalf("cost by model %+v", by)
		}
	})
}

// Expired sessions of every shard leave the indexes at the next read (the
// sweep runs per bucket on a cluster).
func TestSweepDropsExpiredSessionsOfEveryShard(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		conn := redisstoretest.OpenReady(t, srv.Options())
		store := newStores(conn, 1)
		ctx := t.Context()
		for u := range 20 {
			if _, _, err := store.entries.Append(ctx, fmt.Sprintf("u%d", u), "s", "q1", []byte(`{"qa_id": "q1"}`), search.Eager); err != nil {
				t.Fatal(err)
			}
		}
		if st, _ := store.Stats(ctx, time.Hour); st.Running != 20 {
			t.Fatalf("running %d, want 20", st.Running)
		}
		if srv.Mini != nil {
			srv.Mini.SetTime(time.Now().Add(2 * time.Second))
			srv.Mini.FastForward(2 * time.Second)
		} else {
			time.Sleep(2100 * time.Millisecond)
		}
		st, err := store.Stats(ctx, time.Hour)
		if err != nil || st.Running != 0 {
			t.Fatalf("after expiry: %+v, %v", st, err)
		}
		page, _, err := store.List(ctx, sessionstore.ListQuery{Limit: 50, AbandonAfter: time.Hour})
		if err != nil || len(page) != 0 {
			t.Fatalf("after expiry: listed %d, %v", len(page), err)
		}
		if n := srv.DBSize(t); n != 0 {
			t.Fatalf("%d keys left after every session expired and was swept", n)
		}
	})
}

// CACHE_HOST (one host or a comma list, one CACHE_PORT) reaches a cluster
// too: any node is enough to discover the rest, and the store takes the
// cluster layout.
func TestCacheHostReachesACluster(t *testing.T) {
	srv := redisstoretest.NewClusterServer(t)
	host, port, _ := strings.Cut(srv.Cluster.Nodes[1].Addr, ":")
	var p int
	fmt.Sscan(port, &p)
	conn := redisstoretest.OpenReady(t, redisstore.Options{Host: host + "," + host, Port: p, SSLCertReqs: "required"})
	if !conn.Cluster() {
		t.Fatalf("CACHE_HOST=%s CACHE_PORT=%d: mode %q, want cluster", host, p, conn.Mode())
	}
	store := newStores(conn, 60)
	if _, _, err := store.entries.Append(t.Context(), "alice", "s", "q1", []byte(`{"qa_id": "q1"}`), search.Eager); err != nil {
		t.Fatal(err)
	}
	if got := store.Keys("alice", "s").Entries; !strings.Contains(got, "{b") {
		t.Fatalf("entries key %s has no bucket tag", got)
	}
}
