package registry_test

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

type page struct {
	Sessions   []record `json:"sessions"`
	NextCursor *string  `json:"next_cursor"`
}

// pages follows the cursors of a listing; it returns the session ids in
// order and the number of items of every page.
func pages(t *testing.T, h *sidecartest.Host, path string, q url.Values) (ids []string, sizes []int) {
	t.Helper()
	for range 1000 {
		rep := h.Do(t, "GET", path+"?"+q.Encode(), "")
		if rep.Status != 200 {
			t.Fatalf("GET %s?%s: %d %s", path, q.Encode(), rep.Status, rep.Body)
		}
		var p page
		rep.JSON(t, &p)
		sizes = append(sizes, len(p.Sessions))
		for _, r := range p.Sessions {
			ids = append(ids, r.UserID+"/"+r.SessionID)
		}
		if p.NextCursor == nil {
			return ids, sizes
		}
		q.Set("cursor", *p.NextCursor)
	}
	t.Fatal("no last page after 1000 pages")
	return nil, nil
}

func TestListByMetadata(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		var wantPR1, wantAll []string // newest first
		for i := range 30 {
			for _, u := range []string{"alice", "bob"} {
				body := fmt.Sprintf(`{"session_id":"s%02d","metadata":{"repo":"myorg/myrepo","pr":"%d"}}`, i, i%3)
				want(t, h.Do(t, "POST", "/v1/users/"+u+"/sessions", body), 201)
				id := fmt.Sprintf("%s/s%02d", u, i)
				wantAll = append([]string{id}, wantAll...)
				if u == "alice" && i%3 == 1 {
					wantPR1 = append([]string{id}, wantPR1...)
				}
			}
		}
		// Another user's and other metadata never match.
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"other","metadata":{"repo":"x","pr":"1"}}`), 201)

		got, sizes := pages(t, h, "/v1/users/alice/sessions", url.Values{"metadata.repo": {"myorg/myrepo"}, "metadata.pr": {"1"}, "limit": {"3"}})
		if !slices.Equal(got, wantPR1) {
			t.Errorf("alice pr=1:\n got %v\nwant %v", got, wantPR1)
		}
		for _, n := range sizes {
			if n > 3 {
				t.Errorf("a page of %d items, limit 3", n)
			}
		}
		got, _ = pages(t, h, "/v1/sessions", url.Values{"metadata.repo": {"myorg/myrepo"}, "limit": {"7"}})
		if !slices.Equal(got, wantAll) {
			t.Errorf("across users:\n got %v\nwant %v", got, wantAll)
		}
		// With status.
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions/s04/complete", ""), 200)
		got, _ = pages(t, h, "/v1/users/alice/sessions", url.Values{"metadata.pr": {"1"}, "status": {"completed"}})
		if !slices.Equal(got, []string{"alice/s04"}) {
			t.Errorf("completed pr=1: %v", got)
		}
		// Bad filters: 400 naming the parameter.
		for _, q := range []string{"metadata.a%20b=1", "metadata.k=1&metadata.k=2"} {
			rep := h.Do(t, "GET", "/v1/users/alice/sessions?"+q, "")
			if rep.Status != 400 || rep.Code() != "invalid_query" {
				t.Errorf("%s: %d %s", q, rep.Status, rep.Body)
			}
		}
	})
}

// A page examines at most 10 × limit candidates: a rare match far down the
// index takes several pages, the first ones empty but with a cursor.
func TestListByMetadataBounded(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		for i := range 50 {
			want(t, h.Do(t, "POST", "/v1/users/alice/sessions", fmt.Sprintf(`{"session_id":"s%02d","metadata":{"repo":"r"}}`, i)), 201)
			if i == 0 {
				want(t, h.Do(t, "POST", "/v1/users/alice/sessions/s00/complete", ""), 200)
			}
		}
		got, sizes := pages(t, h, "/v1/users/alice/sessions", url.Values{"metadata.repo": {"r"}, "status": {"completed"}, "limit": {"1"}})
		if !slices.Equal(got, []string{"alice/s00"}) {
			t.Fatalf("got %v", got)
		}
		// 50 candidates, 10 a page: the match is on the fifth page.
		if !slices.Equal(sizes, []int{0, 0, 0, 0, 1}) {
			t.Errorf("page sizes %v, want [0 0 0 0 1]", sizes)
		}
	})
}

// Members of sessions Redis expired are dropped from the index when a
// listing meets them.
func TestListByMetadataDropsExpired(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		for _, s := range []string{"s1", "s2"} {
			want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"`+s+`","metadata":{"repo":"r"}}`), 201)
		}
		c := srv.Client(t)
		for _, k := range l.Session("alice", "s1").Own() { // as Redis expiry would
			if err := c.Do(t.Context(), c.B().Del().Key(k).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := pages(t, h, "/v1/users/alice/sessions", url.Values{"metadata.repo": {"r"}})
		if !slices.Equal(got, []string{"alice/s2"}) {
			t.Errorf("got %v", got)
		}
		if m := members(t, srv, l.MetaIndex("alice", "repo", "r")); !slices.Equal(m, []string{"s2"}) {
			t.Errorf("user index after the read: %v", m)
		}
		got, _ = pages(t, h, "/v1/sessions", url.Values{"metadata.repo": {"r"}})
		if !slices.Equal(got, []string{"alice/s2"}) {
			t.Errorf("across users: %v", got)
		}
		if m := members(t, srv, l.MetaGlobal(l.Bucket("alice"), "repo", "r")); !slices.Equal(m, []string{"alice:s2"}) {
			t.Errorf("global index after the read: %v", m)
		}
	})
}
