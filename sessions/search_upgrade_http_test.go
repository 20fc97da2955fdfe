package sessions_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A user whose sessions an older sidecar indexed (documents with a version
// under the same keys, postings in per-user keys, a marker holding counts
// and no build cursor) finds every session again with the first user-wide
// search after the upgrade, under on-demand and eager: the search builds
// the user's index anew (answering "building" until it is built).
func TestUserSearchAfterTheUpgrade(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		for _, mode := range []string{"on-demand", "eager"} {
			t.Run(mode, func(t *testing.T) {
				h := startSearch(t, srv, envconf.Env{"SEARCH_INDEX": mode})
				user, c, l := "up-"+mode, srv.Client(t), srv.Layout()
				words := []string{"walrus", "narwhal", "pelican"}
				for i, w := range words {
					path := fmt.Sprintf("/v1/users/%s/sessions/s%d/entries", user, i)
					if rep := h.Do(t, "POST", path, `{"question":"`+w+`?","answer":"yes"}`); rep.Status != 201 {
						t.Fatalf("append: %s", rep)
					}
				}
				if _, got := hits(t, h, "/v1/users/"+user+"/search?", "walrus"); !strings.Contains(got, "s0/entry:") {
					t.Fatalf("before: %q", got)
				}
				// the older sidecar's state
				for i := range words {
					docs := l.SearchEntryDocs(user, fmt.Sprintf("s%d", i))
					c.Do(t.Context(), c.B().Del().Key(docs).Build())
					c.Do(t.Context(), c.B().Hset().Key(docs).FieldValue().FieldValue(" v", "1764000000000000").
						FieldValue(" cov", "1\tx").FieldValue("entry\tq", "1\t1\t1\tab\tzzz 1\tzzz").Build())
				}
				c.Do(t.Context(), c.B().Del().Key(l.SearchSessions(user)).Build())
				c.Do(t.Context(), c.B().Del().Key(l.SearchStats(user)).Build())
				c.Do(t.Context(), c.B().Hset().Key(l.SearchStats(user)).FieldValue().FieldValue("n", "3").FieldValue("len", "6").Build())
				for i, w := range words {
					got := ""
					for range 20 {
						if _, got = hits(t, h, "/v1/users/"+user+"/search?", w); got != "" {
							break
						}
					}
					if want := fmt.Sprintf("s%d/entry:", i); !strings.HasPrefix(got, want) || strings.Contains(got, ",") {
						t.Errorf("%s after the upgrade: %q, want its one entry in s%d", w, got, i)
					}
				}
				if n, err := c.Do(t.Context(), c.B().Hexists().Key(l.SearchStats(user)).Field("n").Build()).AsInt64(); err != nil || n != 0 {
					t.Errorf("the marker keeps the older sidecar's count (%d, %v)", n, err)
				}
			})
		}
	})
}
