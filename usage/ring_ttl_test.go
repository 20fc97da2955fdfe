package usage_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The session's ring of idempotency keys (agent_session_usage_ids) that a
// usage call makes anew gets the session's TTL: once another program
// removed it, the next call with a key wrote it again without one when
// the session's bookkeeping was not due (within the grain), and it
// outlived the session.
func TestUsageIDsMadeAnewGetsTTL(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		p := "/v1/users/alice/sessions/s1/usage"
		if r := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":1}`, "Idempotency-Key", "k1"); r.Status != 201 {
			t.Fatal(r)
		}
		c := srv.Client(t)
		ids := srv.Layout().Session("alice", "s1").Usage
		if err := c.Do(t.Context(), c.B().Del().Key(ids).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if r := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":1}`, "Idempotency-Key", "k2"); r.Status != 201 {
			t.Fatal(r)
		}
		if got, err := c.Do(t.Context(), c.B().Ttl().Key(ids).Build()).AsInt64(); err != nil || got <= 0 {
			t.Fatalf("%s made anew by a usage call: TTL %d (%v), want the session's", ids, got, err)
		}
	})
}
