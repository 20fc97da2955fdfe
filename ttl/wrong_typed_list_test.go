package ttl_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
)

// PUT .../ttl on a "session" whose only key is Cognee's entries list
// holding another type (another program wrote a string there) is refused
// with nothing written. It made the record and filed the session in the
// status and expiry sets, then met the string reading the list's first
// entry for started_at, and Redis's WRONGTYPE became a 409 "nothing was
// changed".
func TestTTLOnAWrongTypedCogneeListWritesNothing(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, ttl.Factory)
		c, l := srv.Client(t), srv.Layout()
		k := l.Session("u1", "s1")
		if err := c.Do(t.Context(), c.B().Set().Key(k.Entries).Value("not a list").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		r := h.Do(t, "PUT", "/v1/users/u1/sessions/s1/ttl", `{"ttl_seconds":60}`)
		if r.Status != 409 || r.Code() != "key_wrong_type" {
			t.Errorf("ttl: %d %s, want 409 key_wrong_type", r.Status, r.Body)
		}
		for _, key := range []string{k.Record, k.Expiry, k.UserIndex[0]} {
			if n, _ := c.Do(t.Context(), c.B().Exists().Key(key).Build()).AsInt64(); n != 0 {
				t.Errorf("%s written by the refused write", key)
			}
		}
	})
}
