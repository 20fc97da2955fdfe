package main

import (
	"net/http"
	"testing"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// TestWrongTypedReads: a read of a session whose key another program
// wrote with another type answers 409 key_wrong_type, as the writes on the
// same keys do, never 500.
func TestWrongTypedReads(t *testing.T) {
	srv := redisstoretest.New(t)
	h := sidecartest.Start(t, srv, nil, modules.All()...)
	c := srv.Client(t)
	l := srv.Layout()
	for _, tc := range []struct {
		name, session, key, path string
	}{
		{"listEntries", "s1", l.Session("alice", "s1").Entries, "/entries"},
		{"searchEntries", "s2", l.Session("alice", "s2").Entries, "/search?q=hello"},
		{"listTraces", "s3", l.Session("alice", "s3").Traces, "/traces"},
		{"listContext", "s4", l.Session("alice", "s4").Context, "/context"},
		{"getSession", "s5", l.Session("alice", "s5").Record, ""},
		{"getSessionEvents", "s6", l.SessionEvents("alice", "s6"), "/events"},
	} {
		base := "/v1/users/alice/sessions/" + tc.session
		if r := h.Do(t, "POST", base+"/entries", `{"question":"hello","answer":"a"}`); r.Status != http.StatusCreated {
			t.Fatalf("append: %s", r)
		}
		if r := h.Do(t, "POST", base+"/traces", `{"origin_function":"f","status":"success"}`); r.Status != http.StatusCreated {
			t.Fatalf("trace: %s", r)
		}
		if r := h.Do(t, "POST", base+"/context", `{"id":"c1"}`); r.Status != http.StatusCreated {
			t.Fatalf("context: %s", r)
		}
		if err := c.Do(t.Context(), c.B().Del().Key(tc.key).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(t.Context(), c.B().Sadd().Key(tc.key).Member("x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if r := h.Do(t, "GET", base+tc.path, ""); r.Status != http.StatusConflict || r.Code() != "key_wrong_type" {
			t.Errorf("%s with %s a set: %s, want 409 key_wrong_type", tc.name, tc.key, r)
		}
	}
}
