package sessionstore_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// BenchmarkListAbandoned lists one page of 50 abandoned sessions out of n
// (half abandoned, half running): the cost must not grow with n, since
// "abandoned" is a score range of the running index, not a scan.
//
//	go test -run '^$' -bench ListAbandoned -benchtime 2s ./sessionstore/
func BenchmarkListAbandoned(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			srv := redisstoretest.New(b)
			c := srv.Client(b)
			populate(b, c, srv.Layout(), n)
			conn := redisstoretest.OpenReady(b, srv.Options())
			store := newStores(conn, 3600)
			q := sessionstore.ListQuery{Status: sessionstore.StatusAbandoned, Limit: 50, AbandonAfter: 30 * time.Minute}
			for b.Loop() {
				page, _, err := store.List(b.Context(), q)
				if err != nil || len(page) != 50 {
					b.Fatalf("got %d sessions, %v", len(page), err)
				}
			}
		})
	}
}

// populate writes n session records and their index entries: even ones idle
// for two hours (abandoned), odd ones active now.
func populate(b *testing.B, c rueidis.Client, l redisstore.Layout, n int) {
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
		score := now
		if i%2 == 0 {
			score -= (2 * time.Hour).Microseconds()
		}
		sc := strconv.FormatInt(score, 10)
		k := l.Session(user, session)
		cmds = append(cmds,
			c.B().Hset().Key(k.Record).FieldValue().
				FieldValue("status", "running").FieldValue("started_at", sc).FieldValue("last_activity_at", sc).Build(),
			c.B().Zadd().Key(k.GlobalIndex[0]).ScoreMember().ScoreMember(float64(score), user+":"+session).Build(),
		)
		if len(cmds) >= 2000 {
			flush()
		}
	}
	flush()
}
