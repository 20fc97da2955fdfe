package registry_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// BenchmarkListByMetadata lists one page of 50 sessions across users out of
// n sessions that all hold repo=r: the cost must not grow with n (the
// smaller pair's index drives; a page examines at most 10 × limit
// candidates). "pairs": repo=r and pr=1, half the sessions have pr=1, so
// pages are full. "status": repo=r and status=completed, 1 in 100 is
// completed, so a page examines its whole budget of 500 candidates and
// holds about 5 sessions.
//
//	go test -run '^$' -bench ListByMetadata -benchtime 2s ./registry/
func BenchmarkListByMetadata(b *testing.B) {
	for _, c := range []struct {
		name string
		q    sessionstore.ListQuery
	}{
		{"pairs", sessionstore.ListQuery{Metadata: map[string]string{"repo": "r", "pr": "1"}}},
		{"status", sessionstore.ListQuery{Metadata: map[string]string{"repo": "r"}, Status: sessionstore.StatusCompleted}},
	} {
		for _, n := range []int{1_000, 100_000} {
			b.Run(fmt.Sprintf("%s/sessions=%d", c.name, n), func(b *testing.B) {
				srv := redisstoretest.New(b)
				populateMeta(b, srv.Client(b), srv.Layout(), n)
				conn := redisstoretest.OpenReady(b, srv.Options())
				store := sessionstore.New(conn, sessionstore.Config{TTLSeconds: 3600, AbandonAfterSeconds: 1800})
				q := c.q
				q.Limit, q.AbandonAfter = 50, 30*time.Minute
				items := 0
				for b.Loop() {
					page, next, err := store.List(b.Context(), q)
					if err != nil || next == "" {
						b.Fatalf("got %d sessions, next %q, %v", len(page), next, err)
					}
					items += len(page)
				}
				b.ReportMetric(float64(items)/float64(b.N), "sessions/page")
			})
		}
	}
}

// populateMeta writes n session records with metadata repo=r, pr=1 on every
// second one, completed on every hundredth, with their metadata index
// entries across users.
func populateMeta(b *testing.B, c rueidis.Client, l redisstore.Layout, n int) {
	b.Helper()
	now := time.Now().UnixMicro()
	cmds := make(rueidis.Commands, 0, 3000)
	flush := func() {
		for _, r := range c.DoMulti(b.Context(), cmds...) {
			if err := r.Error(); err != nil {
				b.Fatal(err)
			}
		}
		cmds = cmds[:0]
	}
	for i := range n {
		user, session := fmt.Sprintf("user%d", i%97), fmt.Sprintf("s%d", i)
		score := now - int64(i)
		sc := strconv.FormatInt(score, 10)
		pr, status := strconv.Itoa(i%2), "running"
		if i%100 == 0 {
			status = "completed"
		}
		meta := `{"repo":"r","pr":"` + pr + `"}`
		k := l.Session(user, session)
		g := l.Bucket(user)
		cmds = append(cmds,
			c.B().Hset().Key(k.Record).FieldValue().
				FieldValue("status", status).FieldValue("started_at", sc).FieldValue("last_activity_at", sc).FieldValue("metadata", meta).Build(),
			c.B().Zadd().Key(l.MetaGlobal(g, "repo", "r")).ScoreMember().ScoreMember(float64(score), user+":"+session).Build(),
			c.B().Zadd().Key(l.MetaGlobal(g, "pr", pr)).ScoreMember().ScoreMember(float64(score), user+":"+session).Build(),
		)
		if len(cmds) >= 2000 {
			flush()
		}
	}
	flush()
}

// BenchmarkStartOrReuse calls start-or-reuse for a user with `others`
// running sessions of other agents. "reuse": the session of agent a is the
// newest, found first, whatever the user holds. "miss": no running session
// matches, so each call examines the whole bound of 256 candidates (never
// more) and creates a session (left without the pair, so the next call
// misses again): the worst case.
//
//	go test -run '^$' -bench StartOrReuse -benchtime 2s ./registry/
func BenchmarkStartOrReuse(b *testing.B) {
	for _, c := range []struct {
		name   string
		others int
		match  string
	}{
		{"reuse", 0, `{"agent":"a"}`},
		{"reuse", 1000, `{"agent":"a"}`},
		{"miss", 1000, `{"agent":"nobody"}`},
	} {
		b.Run(fmt.Sprintf("%s/others=%d", c.name, c.others), func(b *testing.B) {
			srv := redisstoretest.New(b)
			conn := redisstoretest.OpenReady(b, srv.Options())
			store := &registry.Store{Store: sessionstore.New(conn, sessionstore.Config{TTLSeconds: 3600, AbandonAfterSeconds: 1800})}
			ctx := b.Context()
			for i := range c.others {
				m := fmt.Sprintf(`{"agent":"o%d"}`, i)
				if _, err := store.Active(ctx, "alice", registry.Start{Metadata: m, Match: m}); err != nil {
					b.Fatal(err)
				}
			}
			first, err := store.Active(ctx, "alice", registry.Start{Metadata: `{"agent":"a"}`, Match: `{"agent":"a"}`})
			if err != nil || !first.New {
				b.Fatal(first, err)
			}
			for b.Loop() {
				got, err := store.Active(ctx, "alice", registry.Start{Match: c.match})
				if err != nil {
					b.Fatal(err)
				}
				if c.name == "reuse" && (got.New || got.SessionID != first.SessionID) {
					b.Fatalf("not reused: %+v", got)
				}
			}
		})
	}
}
