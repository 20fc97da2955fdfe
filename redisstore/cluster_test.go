package redisstore_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// slot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of the hash tag
// (the first {...} with something inside) or of the whole key, mod 16384.
func slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// The standalone layout is Cognee's, name for name; the cluster layout puts
// all 15 keys of a session script in one slot, and the buckets spread over
// the three slot ranges redis-cli gives a 3-master cluster.
func TestClusterLayout(t *testing.T) {
	k := redisstore.Layout{}.Session("alice", "chat-1")
	want := []string{
		"agent_sessions:alice:chat-1", "agent_traces:alice:chat-1", "session_context:alice:chat-1",
		"agent_session_record:alice:chat-1", "agent_session_qa_index:alice:chat-1", "agent_session_usage_ids:alice:chat-1",
		"agent_sessions_by_user:alice:running", "agent_sessions_by_user:alice:completed", "agent_sessions_by_user:alice:failed",
		"agent_sessions_global:running", "agent_sessions_global:completed", "agent_sessions_global:failed",
		"agent_sessions_global:expiry", "agent_usage_totals", "agent_usage_by_model",
	}
	if got := k.List(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("standalone keys changed:\n got %v\nwant %v", got, want)
	}
	if (redisstore.Layout{}).Buckets() != 1 {
		t.Fatal("standalone layout must have one shard")
	}

	l := redisstore.Layout{Cluster: true}
	ranges := map[int]bool{}
	buckets := map[int]bool{}
	for i := range 2000 {
		user := fmt.Sprintf("user-%d", i)
		keys := l.Session(user, "s").List()
		b := l.Bucket(user)
		buckets[b] = true
		tag := fmt.Sprintf("{b%d}", b)
		for _, key := range keys {
			if !strings.Contains(key, tag) || slot(key) != slot(keys[0]) {
				t.Fatalf("user %s: key %s not in the slot of %s", user, key, keys[0])
			}
		}
		g := l.Global(b)
		if g.Index != l.Session(user, "s").GlobalIndex || slot(g.RecordPrefix+user+":s") != slot(keys[0]) {
			t.Fatalf("user %s: shard %d keys differ", user, b)
		}
		ranges[slot(keys[0])*3/16384] = true
	}
	if len(buckets) != redisstore.Buckets || len(ranges) != 3 {
		t.Fatalf("%d buckets used, %d of 3 slot ranges", len(buckets), len(ranges))
	}
	if k := l.Session("alice", "chat-1"); k.Entries != fmt.Sprintf("agent_sessions:{b%d}:alice:chat-1", l.Bucket("alice")) {
		t.Fatalf("cluster entries key %s", k.Entries)
	}
}

// Listing across users, stats and cost by model read every shard and merge:
// on a cluster, sessions of many users (spread over the buckets and the
// masters) page out exactly once each in (activity desc, member desc) order,
// and the sums match what was written.
func TestReadsAcrossUsersMergeEveryShard(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		conn := openReady(t, srv.Options())
		store := redisstore.NewSessions(conn, redisstore.SessionConfig{TTLSeconds: 600})
		ctx := t.Context()
		const users, per = 37, 3
		written := 0
		for u := range users {
			for s := range per {
				user, session := fmt.Sprintf("u%d", u), fmt.Sprintf("s%d", s)
				if _, err := store.AddUsage(ctx, user, session, redisstore.Usage{Model: fmt.Sprintf("m%d", u%3), TokensIn: 10, TokensOut: 1, CostNanoUSD: 7}); err != nil {
					t.Fatal(err)
				}
				written++
				if s == 1 {
					if _, err := store.End(ctx, user, session, redisstore.StatusCompleted); err != nil {
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
		for _, status := range []string{"", redisstore.StatusRunning, redisstore.StatusCompleted} {
			var got []redisstore.SessionState
			cursor := ""
			for pages := 0; ; pages++ {
				page, next, err := store.List(ctx, redisstore.ListQuery{Status: status, Limit: 7, Cursor: cursor, AbandonAfter: time.Hour})
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
			case redisstore.StatusRunning:
				want = users * (per - 1)
			case redisstore.StatusCompleted:
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
		by, err := store.CostByModel(ctx)
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
		conn := openReady(t, srv.Options())
		store := redisstore.NewSessions(conn, redisstore.SessionConfig{TTLSeconds: 1})
		ctx := t.Context()
		for u := range 20 {
			if _, err := store.Append(ctx, fmt.Sprintf("u%d", u), "s", "q1", []byte(`{"qa_id": "q1"}`)); err != nil {
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
		page, _, err := store.List(ctx, redisstore.ListQuery{Limit: 50, AbandonAfter: time.Hour})
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
	conn := openReady(t, redisstore.Options{Host: host + "," + host, Port: p, SSLCertReqs: "required"})
	if !conn.Cluster() {
		t.Fatalf("CACHE_HOST=%s CACHE_PORT=%d: mode %q, want cluster", host, p, conn.Mode())
	}
	store := redisstore.NewSessions(conn, redisstore.SessionConfig{TTLSeconds: 60})
	if _, err := store.Append(t.Context(), "alice", "s", "q1", []byte(`{"qa_id": "q1"}`)); err != nil {
		t.Fatal(err)
	}
	if got := store.Keys("alice", "s").Entries; !strings.Contains(got, "{b") {
		t.Fatalf("entries key %s has no bucket tag", got)
	}
}
