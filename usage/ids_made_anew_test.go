package usage_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The session's Idempotency-Key ring that another program removed, made
// anew by the next keyed usage call, gets the session's TTL at once, as
// every module's ring does (session.made). It got none until the session's
// next due bookkeeping, and none at all when no write came after: it
// outlived the session.
func TestUsageIDsMadeAnewGetTheSessionsTTL(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		p := "/v1/users/u1/sessions/s1/usage"
		ids := srv.Layout().Session("u1", "s1").Usage
		if r := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":1}`, "Idempotency-Key", "k1"); r.Status != 201 {
			t.Fatalf("usage: %d %s", r.Status, r.Body)
		}
		if err := c.Do(t.Context(), c.B().Del().Key(ids).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if r := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":1}`, "Idempotency-Key", "k2"); r.Status != 201 {
			t.Fatalf("usage: %d %s", r.Status, r.Body)
		}
		if got, err := c.Do(t.Context(), c.B().Ttl().Key(ids).Build()).AsInt64(); err != nil || got <= 0 {
			t.Fatalf("%s made anew: TTL %d (%v), want the session's", ids, got, err)
		}
	})
}
