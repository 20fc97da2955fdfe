package registry_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// A TTL change refused by its bookkeeping (an index the session is in
// holds another type: 409, nothing written) leaves the session's expiry
// set score as it was. The undo put back the old time with the new TTL:
// after a refused ttl 0 the score was +inf, so the sweep never dropped the
// session from the status sets once its keys expired (counted running
// forever).
func TestRefusedTTLChangeLeavesTheExpirySet(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory, ttl.Factory, registry.Factory)
		c, l := srv.Client(t), srv.Layout()
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","metadata":{"pr":"42"}}`), 201)
		expiry := l.Global(l.Bucket("alice")).Expiry
		score := func() string {
			v, err := c.Do(t.Context(), c.B().Zscore().Key(expiry).Member("alice:s1").Build()).ToString()
			if err != nil {
				t.Fatalf("zscore: %v", err)
			}
			return v
		}
		before := score()
		idx := l.MetaIndex("alice", "pr", "42")
		if err := c.Do(t.Context(), c.B().Del().Key(idx).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(t.Context(), c.B().Set().Key(idx).Value("x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{`{"ttl_seconds":0}`, `{"ttl_seconds":5}`} {
			if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s1/ttl", body); rep.Status != 409 {
				t.Fatalf("ttl %s: %d %s, want 409 (the index holds a string)", body, rep.Status, rep.Body)
			}
			if got := score(); got != before {
				t.Errorf("after a refused ttl %s the expiry score is %s, want %s as before", body, got, before)
			}
		}
	})
}
