package usage_test

import (
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A listing by status answers the sessions whose status, as the listing
// itself reports it, is that status. The status sets are scored by the
// last bookkeeping (exact to the grain, here 1 s: SESSION_ABANDON_AFTER_
// SECONDS 30), the reported status by the last activity: a session written
// again within the grain was listed under ?status=abandoned reporting
// "running", and missing from ?status=running. Miniredis only: its clock
// is moved, not waited for.
func TestListingByStatusAgreesWithTheStatusItReports(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		if srv.Mini == nil {
			t.Skip("moves the server's clock")
		}
		h := start(t, srv, envconf.Env{"SESSION_ABANDON_AFTER_SECONDS": "30"})
		t0 := time.Now()
		srv.Mini.SetTime(t0)
		p := "/v1/users/u1/sessions/s1/usage"
		if r := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":1}`); r.Status != 201 {
			t.Fatalf("usage: %d %s", r.Status, r.Body)
		}
		srv.Mini.SetTime(t0.Add(900 * time.Millisecond)) // within the grain: no bookkeeping
		if r := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":1}`); r.Status != 201 {
			t.Fatalf("usage: %d %s", r.Status, r.Body)
		}
		srv.Mini.SetTime(t0.Add(30*time.Second + 500*time.Millisecond))
		for _, status := range []string{"running", "abandoned"} {
			var pg page
			r := h.Do(t, "GET", "/v1/users/u1/sessions?status="+status, "")
			if r.Status != 200 {
				t.Fatalf("list %s: %d %s", status, r.Status, r.Body)
			}
			r.JSON(t, &pg)
			for _, s := range pg.Sessions {
				if string(s.Status) != status {
					t.Errorf("?status=%s lists %s reporting status %q", status, s.SessionID, s.Status)
				}
			}
			if status == "running" && len(pg.Sessions) != 1 {
				t.Errorf("?status=running: %d sessions, want s1 (last active 29.6 s ago, abandoned after 30 s)", len(pg.Sessions))
			}
		}
	})
}
