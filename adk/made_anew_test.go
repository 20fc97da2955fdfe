package adk_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// An ADK session created again on a sidecar session that still lists the
// ADK record's family (another program removed the record) gets the
// record with the session's TTL: the create wrote it again without one
// when the session's bookkeeping was not due (within the grain), and the
// record outlived the session.
func TestADKRecordMadeAnewGetsTTL(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		want(t, h.Do(t, "POST", app, `{"session_id":"s1"}`), 201)
		c := srv.Client(t)
		rec := adkKeys(srv, "weather", "alice", "s1")[0]
		if err := c.Do(t.Context(), c.B().Del().Key(rec).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		want(t, h.Do(t, "POST", app, `{"session_id":"s1"}`), 201)
		if got, err := c.Do(t.Context(), c.B().Ttl().Key(rec).Build()).AsInt64(); err != nil || got <= 0 {
			t.Fatalf("%s made anew by a create: TTL %d (%v), want the session's", rec, got, err)
		}
	})
}
