package adk_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/adk"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

type appList struct {
	Sessions []struct {
		ID               string  `json:"id"`
		AppName          string  `json:"app_name"`
		UserID           string  `json:"user_id"`
		SidecarSessionID string  `json:"sidecar_session_id"`
		LastUpdateTime   float64 `json:"last_update_time"`
	} `json:"sessions"`
	Page       int     `json:"page"`
	Limit      int     `json:"limit"`
	TotalItems int     `json:"total_items"`
	TotalPages int     `json:"total_pages"`
	NextCursor *string `json:"next_cursor"`
}

func listOf(t testing.TB, h *sidecartest.Host, path string) appList {
	t.Helper()
	rep := h.Do(t, "GET", path, "")
	if rep.Status != 200 {
		t.Fatalf("GET %s: %s", path, rep)
	}
	var l appList
	rep.JSON(t, &l)
	return l
}

// "<user>/<id>" of each session listed.
func (l appList) names() []string {
	var out []string
	for _, s := range l.Sessions {
		out = append(out, s.UserID+"/"+s.ID)
	}
	return out
}

func (l appList) meta() string {
	return fmt.Sprintf("page %d limit %d total %d pages %d", l.Page, l.Limit, l.TotalItems, l.TotalPages)
}

func adkPath(app, user string) string { return "/v1/adk/apps/" + app + "/users/" + user + "/sessions" }

// The sidecar session of an ADK session: "<app>.<id>", or a hash where the
// app's name holds a '.' or the two do not fit an id.
func TestSidecarSession(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, tc := range []struct{ app, session, want string }{
		{"weather", "s1", "weather.s1"},
		{"weather", "a.b", "weather.a.b"},
		{"my.app", "s1", ""},
		{long, strings.Repeat("y", 27), long + "." + strings.Repeat("y", 27)},
		{long, strings.Repeat("y", 28), ""},
	} {
		got := adk.SidecarSession(tc.app, tc.session)
		if tc.want == "" {
			if !strings.HasPrefix(got, "adk-") || len(got) != 44 || strings.Contains(got, ".") {
				t.Errorf("%q/%q: %q, want adk-<sha1>", tc.app, tc.session, got)
			}
		} else if got != tc.want {
			t.Errorf("%q/%q: %q, want %q", tc.app, tc.session, got, tc.want)
		}
	}
	if adk.SidecarSession("my.app", "s1") == adk.SidecarSession("my", "app.s1") {
		t.Error("two ADK sessions share a sidecar session")
	}
}

// ADK keys a session by (app, user, session): two apps' sessions of one id
// are two sessions (two sidecar sessions), each with its events, state,
// listing and delete; an app whose name holds a '.' and ids too long to
// join work the same (the hashed sidecar session).
func TestTwoAppsSameIDs(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		long := strings.Repeat("L", 120)
		apps := []string{"weather", "news", "my.app"}
		for i, a := range apps {
			for _, id := range []string{"s1", long} {
				s := want(t, h.Do(t, "POST", adkPath(a, "alice"), fmt.Sprintf(`{"session_id":%q,"state":{"k":%d}}`, id, i)), 201)
				if s.ID != id || s.AppName != a {
					t.Fatalf("%s/%s created %+v", a, id, s)
				}
				want(t, h.Do(t, "POST", adkPath(a, "alice")+"/"+id+"/events", appendBody("e-"+a, s.LastUpdateTime+1, s.LastUpdateTime, fmt.Sprintf(`{"n":%d}`, i))), 201)
			}
			if rep := h.Do(t, "POST", adkPath(a, "alice"), `{"session_id":"s1"}`); rep.Status != 409 || rep.Code() != "session_exists" {
				t.Fatalf("s1 again in %s: %s", a, rep)
			}
		}
		for i, a := range apps {
			for _, id := range []string{"s1", long} {
				g := want(t, h.Do(t, "GET", adkPath(a, "alice")+"/"+id, ""), 200)
				if got, w := state(g), fmt.Sprintf(`{"k":%d,"n":%d}`, i, i); got != w || len(g.Events) != 1 || g.Events[0]["id"] != "e-"+a {
					t.Fatalf("%s/%s: state %s events %v", a, id, got, g.Events)
				}
			}
			l := listOf(t, h, adkPath(a, "alice"))
			if got := l.names(); !slices.Equal(got, []string{"alice/s1", "alice/" + long}) {
				t.Fatalf("%s's list %v", a, got)
			}
		}
		want(t, h.Do(t, "DELETE", adkPath("weather", "alice")+"/s1", ""), 204)
		want(t, h.Do(t, "GET", adkPath("weather", "alice")+"/s1", ""), 404)
		want(t, h.Do(t, "GET", adkPath("news", "alice")+"/s1", ""), 200)
		want(t, h.Do(t, "GET", adkPath("my.app", "alice")+"/s1", ""), 200)
		// the sidecar sessions: one per ADK session
		for _, sid := range []string{"news.s1", adk.SidecarSession("my.app", "s1")} {
			if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/"+sid+"/ttl", `{"ttl_seconds":100}`); rep.Status != 200 {
				t.Fatalf("the sidecar session %s: %s", sid, rep)
			}
		}
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/weather.s1/ttl", `{"ttl_seconds":100}`); rep.Status != 404 {
			t.Fatalf("the deleted session's sidecar session: %s", rep)
		}
	})
}

// listSessions without a userId: the app's sessions of every user (users
// in every bucket on Cluster), in creation order, by last update time
// (ties by id, then user) either way, with ADK's limit, offset and page,
// and pages past AppPage continued by next_cursor; another app's sessions
// never show.
func TestListAcrossUsers(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		empty := listOf(t, h, "/v1/adk/apps/weather/sessions")
		if len(empty.Sessions) != 0 || empty.meta() != "page 1 limit 0 total 0 pages 0" || empty.NextCursor != nil {
			t.Fatalf("an app without sessions: %+v", empty)
		}
		type sess struct {
			user, id string
			ts       float64
		}
		var made []sess
		users := []string{"u1", "u2", "u3", "u4", "u5", "u6"}
		stamps := []float64{5, 3, 5, 1, 3, 5, 2, 5, 4, 3, 5, 1}
		for i, ts := range stamps {
			u, id := users[i%len(users)], fmt.Sprintf("s%d", i%4)
			s := want(t, h.Do(t, "POST", adkPath("weather", u), fmt.Sprintf(`{"session_id":%q}`, id)), 201)
			want(t, h.Do(t, "POST", adkPath("weather", u)+"/"+id+"/events", appendBody("e", ts, s.LastUpdateTime, `{}`)), 201)
			made = append(made, sess{u, id, ts})
			want(t, h.Do(t, "POST", adkPath("other", u), fmt.Sprintf(`{"session_id":%q}`, id)), 201)
		}
		names := func(ss []sess) []string {
			var out []string
			for _, s := range ss {
				out = append(out, s.user+"/"+s.id)
			}
			return out
		}
		asc := slices.Clone(made)
		slices.SortFunc(asc, func(a, b sess) int {
			if a.ts != b.ts {
				return int(a.ts - b.ts)
			}
			return strings.Compare(a.id+" "+a.user, b.id+" "+b.user)
		})
		desc := slices.Clone(asc)
		slices.SortStableFunc(desc, func(a, b sess) int { return int(b.ts - a.ts) })
		base := "/v1/adk/apps/weather/sessions"
		for _, tc := range []struct {
			query string
			want  []sess
			meta  string
		}{
			{"", made, "page 1 limit 12 total 12 pages 1"},
			{"?order=asc", asc, "page 1 limit 12 total 12 pages 1"},
			{"?order=desc", desc, "page 1 limit 12 total 12 pages 1"},
			{"?order=asc&limit=5", asc[:5], "page 1 limit 5 total 12 pages 3"},
			{"?order=desc&limit=5&offset=4", desc[4:9], "page 1 limit 5 total 12 pages 3"},
			{"?order=desc&limit=5&page=3", desc[10:], "page 3 limit 5 total 12 pages 3"},
			{"?limit=4&offset=3", made[3:7], "page 1 limit 4 total 12 pages 3"},
			{"?offset=9", made[9:], "page 1 limit 12 total 12 pages 1"},
			{"?limit=0", nil, "page 1 limit 0 total 12 pages 0"},
			{"?limit=3&offset=20", nil, "page 7 limit 3 total 12 pages 4"},
		} {
			l := listOf(t, h, base+tc.query)
			if !slices.Equal(l.names(), names(tc.want)) || l.meta() != tc.meta || l.NextCursor != nil {
				t.Errorf("%s:\n got %v %s\nwant %v %s", tc.query, l.names(), l.meta(), names(tc.want), tc.meta)
			}
		}
		for _, s := range listOf(t, h, base).Sessions {
			if s.AppName != "weather" || s.SidecarSessionID != "weather."+s.ID {
				t.Fatalf("listed %+v", s)
			}
		}
		// pages of at most 5: next_cursor continues the window, sent alone
		defer adk.SetAppPage(5)()
		for _, tc := range []struct {
			query string
			want  []sess
		}{
			{"?order=desc", desc},
			{"?limit=7&offset=2", made[2:9]},
			{"?order=asc&offset=1", asc[1:]},
		} {
			var got []string
			l := listOf(t, h, base+tc.query)
			first := l.meta()
			got = append(got, l.names()...)
			for pages := 1; l.NextCursor != nil; pages++ {
				if len(l.Sessions) != 5 || pages > 3 {
					t.Fatalf("%s: page %d holds %d", tc.query, pages, len(l.Sessions))
				}
				l = listOf(t, h, base+"?cursor="+*l.NextCursor)
				if l.meta() != first {
					t.Fatalf("%s: a later page's figures %s, the first's %s", tc.query, l.meta(), first)
				}
				got = append(got, l.names()...)
			}
			if !slices.Equal(got, names(tc.want)) {
				t.Errorf("%s paged:\n got %v\nwant %v", tc.query, got, names(tc.want))
			}
		}
		for q, code := range map[string]string{
			"cursor=x": "invalid_cursor", "cursor=x&limit=2": "invalid_cursor",
			"cursor=" + *listOf(t, h, base).NextCursor + "&limit=2": "invalid_query",
			"order=up": "invalid_query", "limit=-1": "invalid_query", "limit=2&page=0": "invalid_query",
		} {
			if rep := h.Do(t, "GET", base+"?"+q, ""); rep.Status != 400 || rep.Code() != code {
				t.Errorf("?%s: %s, want %s", q, rep, code)
			}
		}
	})
}

// A session gone another way than deleteSession (the sidecar's own DELETE,
// its TTL) is not listed across users; the listing that meets it takes it
// out of the app's index and out of its count.
func TestListAcrossUsersDropsGone(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		for _, u := range []string{"a", "b", "c"} {
			want(t, h.Do(t, "POST", adkPath("weather", u), `{"session_id":"s1"}`), 201)
		}
		if rep := h.Do(t, "DELETE", "/v1/users/b/sessions/weather.s1", ""); rep.Status != 204 {
			t.Fatalf("the sidecar's DELETE: %s", rep)
		}
		c := srv.Client(t)
		l := srv.Layout()
		idx := l.BucketKey(adk.AppIndexFamily, l.Bucket("b"), "weather:created")
		if n, _ := c.Do(t.Context(), c.B().Zscore().Key(idx).Member("s1 b").Build()).ToString(); n == "" {
			t.Fatal("the index lost b's member before any listing met it")
		}
		got := listOf(t, h, "/v1/adk/apps/weather/sessions?limit=10")
		if !slices.Equal(got.names(), []string{"a/s1", "c/s1"}) || got.TotalItems != 2 {
			t.Fatalf("listed %v %s", got.names(), got.meta())
		}
		if err := c.Do(t.Context(), c.B().Zscore().Key(idx).Member("s1 b").Build()).Error(); err == nil {
			t.Fatal("the listing left the gone session's member")
		}
		if got := listOf(t, h, "/v1/adk/apps/weather/sessions"); got.TotalItems != 2 {
			t.Fatalf("count after: %s", got.meta())
		}
		// deleteSession takes it out at once; a session created again is back
		want(t, h.Do(t, "DELETE", adkPath("weather", "a")+"/s1", ""), 204)
		if got := listOf(t, h, "/v1/adk/apps/weather/sessions").names(); !slices.Equal(got, []string{"c/s1"}) {
			t.Fatalf("after deleteSession %v", got)
		}
		want(t, h.Do(t, "POST", adkPath("weather", "a"), `{"session_id":"s1"}`), 201)
		if got := listOf(t, h, "/v1/adk/apps/weather/sessions").names(); !slices.Equal(got, []string{"c/s1", "a/s1"}) {
			t.Fatalf("created again %v", got)
		}
	})
}

// Every shard of the app's index is written in its users' slot with their
// TTL: keys of the bucket's users, never of another slot (Cluster), and
// they expire with the sessions.
func TestAppIndexTTL(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	want(t, h.Do(t, "POST", adkPath("weather", "alice"), `{"session_id":"s1"}`), 201)
	c := srv.Client(t)
	l := srv.Layout()
	for _, o := range []string{adk.OrderCreated, adk.OrderAsc, adk.OrderDesc} {
		k := l.BucketKey(adk.AppIndexFamily, 0, "weather:"+o)
		ttl, err := c.Do(t.Context(), c.B().Ttl().Key(k).Build()).AsInt64()
		if err != nil || ttl <= 0 {
			t.Errorf("%s: TTL %d %v", k, ttl, err)
		}
		var ms []string
		if ms, err = c.Do(t.Context(), c.B().Zrange().Key(k).Min("0").Max("-1").Build()).AsStrSlice(); err != nil || !slices.Equal(ms, []string{"s1 alice"}) {
			t.Errorf("%s: %v %v", k, ms, err)
		}
	}
	b, _ := json.Marshal(listOf(t, h, "/v1/adk/apps/weather/sessions").names())
	if string(b) != `["alice/s1"]` {
		t.Fatalf("listed %s", b)
	}
}

// A page across users holds at most SIDECAR_MAX_ANSWER_BYTES (one session
// at least): next_cursor continues, and the pages hold every session once.
func TestListAcrossUsersByteCap(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SIDECAR_MAX_ANSWER_BYTES": "4096"})
		var made []string
		for i := range 30 {
			u := fmt.Sprintf("%03d-%s", i, strings.Repeat("u", 100))
			want(t, h.Do(t, "POST", adkPath("weather", u), `{"session_id":"s"}`), 201)
			made = append(made, u+"/s")
		}
		var got []string
		pages := 0
		for path := "/v1/adk/apps/weather/sessions"; ; pages++ {
			rep := h.Do(t, "GET", path, "")
			if rep.Status != 200 || len(rep.Body) > 4096 {
				t.Fatalf("page %d: %d bytes: %s", pages, len(rep.Body), rep)
			}
			var l appList
			rep.JSON(t, &l)
			got = append(got, l.names()...)
			if l.NextCursor == nil {
				break
			}
			path = "/v1/adk/apps/weather/sessions?cursor=" + *l.NextCursor
		}
		if !slices.Equal(got, made) || pages < 2 {
			t.Fatalf("%d pages: %v", pages, got)
		}
	})
}
