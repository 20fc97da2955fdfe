package sessions_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
)

// The user's marker's keys (the JSON list of the user's kept keys),
// written wrong by another program, refuses the user's writes before
// their first write: 409 key_wrong_type, nothing written. A write whose
// bookkeeping was due (here a TTL change, always due) answered 500 after
// its bookkeeping and the record's HSET (the slide decodes the list last).
func TestCorruptMarkerKeysRefuseWritesBeforeAnyWrite(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, ttl.Factory)
		c, l := srv.Client(t), srv.Layout()
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"q0","question":"q","answer":"a"}`); r.Status != 201 {
			t.Fatalf("first append: %d %s", r.Status, r.Body)
		}
		if err := c.Do(t.Context(), c.B().Hset().Key(l.UserMarker("u1")).FieldValue().FieldValue("keys", "not json").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		rec := l.Session("u1", "s1").Record
		if r := h.Do(t, "PUT", base+"/ttl", `{"ttl_seconds":60}`); r.Status != 409 || r.Code() != "key_wrong_type" {
			t.Errorf("PUT ttl: %d %s, want 409 key_wrong_type", r.Status, r.Body)
		}
		if v, _ := c.Do(t.Context(), c.B().Hget().Key(rec).Field("ttl_seconds").Build()).ToString(); v != "" {
			t.Errorf("ttl_seconds %q written by a refused write", v)
		}
	})
}
