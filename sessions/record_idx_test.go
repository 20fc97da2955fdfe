package sessions_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
)

// The record's idx (the sets that hold the session, JSON), written wrong by
// another program, refuses a write whose bookkeeping is due (here a TTL
// change, always due) before its first write, as a bad slid_at or
// ttl_seconds does (TestCorruptRecordFieldsRefuseWritesBeforeAnyWrite):
// 409 key_wrong_type, nothing written. It answered 500 (the bookkeeping
// decodes idx after its first ZADD), the expiry set already moved.
func TestCorruptRecordIdxRefusesWritesBeforeAnyWrite(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, ttl.Factory)
		c, l := srv.Client(t), srv.Layout()
		keys := l.Session("u1", "s1")
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"q0","question":"q","answer":"a"}`); r.Status != 201 {
			t.Fatalf("first append: %d %s", r.Status, r.Body)
		}
		expiry := l.Global(l.Bucket("u1")).Expiry
		score := func() string {
			v, _ := c.Do(t.Context(), c.B().Zscore().Key(expiry).Member("u1:s1").Build()).ToString()
			return v
		}
		before := score()
		if err := c.Do(t.Context(), c.B().Hset().Key(keys.Record).FieldValue().FieldValue("idx", "not json").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if r := h.Do(t, "PUT", base+"/ttl", `{"ttl_seconds":60}`); r.Status != 409 || r.Code() != "key_wrong_type" {
			t.Errorf("PUT ttl: %d %s, want 409 key_wrong_type", r.Status, r.Body)
		}
		if after := score(); after != before {
			t.Errorf("the expiry set moved from %s to %s by a refused write", before, after)
		}
		if v, _ := c.Do(t.Context(), c.B().Hget().Key(keys.Record).Field("ttl_seconds").Build()).ToString(); v != "" {
			t.Errorf("ttl_seconds %q written by a refused write", v)
		}
	})
}
