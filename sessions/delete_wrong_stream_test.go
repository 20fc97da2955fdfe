package sessions_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// DELETE is the way out of a session another program spoiled: its event
// stream overwritten with a string (after the session had it, so no write
// checks its type again) does not make the delete fail half done. With
// SESSION_EVENTS=always it answered 409 "nothing was changed" after
// removing every other key (the tombstone's XADD met the string, Redis's
// WRONGTYPE), and the string stayed: a DELETE again answered 404.
func TestDeleteOfASessionWhoseStreamHoldsAnotherType(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_EVENTS": "always"}, sessions.Factory)
		c, l := srv.Client(t), srv.Layout()
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"q0","question":"q","answer":"a"}`); r.Status != 201 {
			t.Fatalf("append: %d %s", r.Status, r.Body)
		}
		stream := l.SessionEvents("u1", "s1")
		if err := c.Do(t.Context(), c.B().Set().Key(stream).Value("x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if r := h.Do(t, "DELETE", "/v1/users/u1/sessions/s1", ""); r.Status != 204 {
			t.Errorf("delete: %d %s, want 204", r.Status, r.Body)
		}
		if v, _ := c.Do(t.Context(), c.B().Get().Key(stream).Build()).ToString(); v == "x" {
			t.Errorf("%s still holds the other program's string after the delete", stream)
		}
	})
}
