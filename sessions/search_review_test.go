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
