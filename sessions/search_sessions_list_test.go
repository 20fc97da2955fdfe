package sessions_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The user's list of sessions with documents stays bounded although the
// sessions filed in it expire (their hashes go, their members stay): an
// active user whose sessions come and go for days keeps sliding the
// list's TTL, and a user-wide search drops only the expired sessions among
// the newest it reads. An indexing write trims the least recently changed
// past 2 000 (twice the sessions a search reads).
func TestSearchSessionsListStaysBounded(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := startSearch(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		c, l := srv.Client(t), srv.Layout()
		user := "busy"
		list := l.SearchSessions(user)
		// 2 050 sessions whose documents expired long ago
		cmd := c.B().Zadd().Key(list).ScoreMember()
		for i := range 2050 {
			cmd = cmd.ScoreMember(float64(i+1), fmt.Sprintf("old%d", i))
		}
		if err := c.Do(t.Context(), cmd.Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if rep := h.Do(t, "POST", "/v1/users/"+user+"/sessions/new/entries", `{"question":"walrus?","answer":"yes"}`); rep.Status != 201 {
			t.Fatalf("append: %s", rep)
		}
		n, err := c.Do(t.Context(), c.B().Zcard().Key(list).Build()).AsInt64()
		if err != nil || n > 2000 {
			t.Fatalf("the list holds %d sessions (%v), want at most 2000", n, err)
		}
		if _, err := c.Do(t.Context(), c.B().Zscore().Key(list).Member("new").Build()).AsFloat64(); err != nil {
			t.Fatalf("the new session is not listed: %v", err)
		}
		// the oldest went first
		if err := c.Do(t.Context(), c.B().Zscore().Key(list).Member("old0").Build()).Error(); !rueidis.IsRedisNil(err) {
			t.Fatalf("the oldest session is still listed (%v)", err)
		}
		if _, got := hits(t, h, "/v1/users/"+user+"/search?", "walrus"); !strings.HasPrefix(got, "new/entry:") || strings.Contains(got, ",") {
			t.Fatalf("search: %q", got)
		}
	})
}

// A session given a longer TTL, or none (PUT ttl), keeps its documents in
// user-wide searches as long as it lives: the user's list of sessions
// with documents lives at least as long as the session's new TTL (none
// for a session that never expires), as its index does (finish_write
// slides the user's search keys).
func TestSearchSessionsListOutlivesANewTTL(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := startSearch(t, srv, envconf.Env{"SEARCH_INDEX": "eager", "SESSION_TTL_SECONDS": "600"})
		c, l := srv.Client(t), srv.Layout()
		user := "keeper"
		list := l.SearchSessions(user)
		if rep := h.Do(t, "POST", "/v1/users/"+user+"/sessions/s/entries", `{"question":"walrus?","answer":"yes"}`); rep.Status != 201 {
			t.Fatalf("append: %s", rep)
		}
		pttl := func() int64 {
			t.Helper()
			p, err := c.Do(t.Context(), c.B().Pttl().Key(list).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		if p := pttl(); p <= 0 || p > 600_000 {
			t.Fatalf("list PTTL %d, want the session's 600 s", p)
		}
		if rep := h.Do(t, "PUT", "/v1/users/"+user+"/sessions/s/ttl", `{"ttl_seconds":86400}`); rep.Status != 200 {
			t.Fatalf("ttl: %s", rep)
		}
		if p := pttl(); p < 86_000_000 {
			t.Errorf("list PTTL %d after the session's TTL became a day", p)
		}
		if rep := h.Do(t, "PUT", "/v1/users/"+user+"/sessions/s/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
			t.Fatalf("ttl: %s", rep)
		}
		if p := pttl(); p != -1 {
			t.Errorf("list PTTL %d after the session became one that never expires, want -1", p)
		}
		docs, err := c.Do(t.Context(), c.B().Pttl().Key(l.SearchEntryDocs(user, "s")).Build()).AsInt64()
		if err != nil || docs != -1 {
			t.Errorf("the session's index PTTL %d (%v), want -1", docs, err)
		}
	})
}
