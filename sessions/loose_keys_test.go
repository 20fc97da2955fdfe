package sessions_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A DELETE removes every key of the session, also an id index a read made
// (GET .../entries/{qa_id} on a list Cognee wrote) while the session's
// record did not list its family: nothing of the session is left, not even
// its qa ids.
func TestDeleteRemovesAnIndexAReadMade(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		rpush(t, c, keys.Entries, cogneeEntry("q1", 1))
		rpush(t, c, keys.Context, `{"id":"c1","x":"0"}`)
		// the sidecar's record, listing neither list's index
		if r := h.Do(t, "POST", base+"/traces", `{"origin_function":"f","status":"ok"}`); r.Status != 201 {
			t.Fatalf("trace: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "GET", base+"/entries/q1", ""); r.Status != 200 {
			t.Fatalf("entry: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "PATCH", base+"/context/c1", `{"x":"1"}`); r.Status != 200 {
			t.Fatalf("context update: %d %s", r.Status, r.Body)
		}
		if n := srv.DBSize(t); n == 0 {
			t.Fatal("nothing stored")
		}
		if r := h.Do(t, "DELETE", base, ""); r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		if left := srv.Keys(t, "*u1*"); len(left) != 0 {
			t.Fatalf("after DELETE the session left %q", left)
		}
	})
}

// Cognee's lists are keys of the session whoever made them: a sidecar
// write that does not write them (a trace, usage) slides them with the
// session's other keys, as it did before the lean core, so an entries list
// Cognee began does not expire under a session the sidecar keeps alive.
func TestSlideKeepsCogneeListsAlive(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "3600"})
		c := srv.Client(t)
		if r := h.Do(t, "POST", base+"/traces", `{"origin_function":"f","status":"ok"}`); r.Status != 201 {
			t.Fatalf("trace: %d %s", r.Status, r.Body)
		}
		// Cognee writes the entries list after the session started, with
		// a TTL of its own (RPUSH, then EXPIRE)
		rpush(t, c, keys.Entries, cogneeEntry("q1", 1))
		if err := c.Do(t.Context(), c.B().Expire().Key(keys.Entries).Seconds(100).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		// the bookkeeping due (its last slide long ago): a trace slides
		// the entries list too
		if err := c.Do(t.Context(), c.B().Hset().Key(keys.Record).FieldValue().FieldValue("slid_at", "1").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if r := h.Do(t, "POST", base+"/traces", `{"origin_function":"f","status":"ok"}`); r.Status != 201 {
			t.Fatalf("trace: %d %s", r.Status, r.Body)
		}
		if got := ttlOf(t, c, keys.Entries); got < 3000 {
			t.Fatalf("after a due write the entries list has TTL %d, want the session's 3600", got)
		}
	})
}

// A record whose fams lists a code this sidecar does not know (a family a
// newer or older version registers: a rolling upgrade) neither fails a
// write after it wrote (a 500 with the trace stored) nor stops the
// session's delete.
func TestUnknownFamilyCodeFailsNothing(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		if r := h.Do(t, "POST", base+"/traces", `{"origin_function":"f","status":"ok"}`); r.Status != 201 {
			t.Fatalf("trace: %d %s", r.Status, r.Body)
		}
		// another version's family, and its bookkeeping due
		if err := c.Do(t.Context(), c.B().Hset().Key(keys.Record).FieldValue().FieldValue("fams", " t zz9 ").FieldValue("slid_at", "1").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if r := h.Do(t, "POST", base+"/traces", `{"origin_function":"f","status":"ok"}`); r.Status != 201 {
			t.Fatalf("trace with an unknown family code in fams: %d %s", r.Status, r.Body)
		}
		if n := len(lrange(t, c, keys.Traces)); n != 2 {
			t.Fatalf("%d traces, want 2", n)
		}
		if got := ttlOf(t, c, keys.Traces); got <= 0 {
			t.Fatalf("traces TTL %d after a due write", got)
		}
		// the other version's code stays listed, for that version's slides
		fams, err := c.Do(t.Context(), c.B().Hget().Key(keys.Record).Field("fams").Build()).ToString()
		if err != nil || fams != " t zz9 " {
			t.Fatalf("fams %q (%v), want the unknown code kept", fams, err)
		}
		if r := h.Do(t, "DELETE", base, ""); r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		if left := srv.Keys(t, "*u1*"); len(left) != 0 {
			t.Fatalf("after DELETE the session left %q", left)
		}
	})
}
