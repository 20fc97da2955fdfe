package messages_test

import (
	"github.com/agentsidecar/agentsidecar/envconf"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A postings key of another type (another program wrote it) refuses every
// write that would index a term there, 409 key_wrong_type naming it, before
// the script's first write: the message, the tree and the record unchanged.
func TestPostingsKeyWrongType(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		post(t, h, `{"id":"m0","role":"user","content":"hello"}`, 201)
		c := srv.Client(t)
		key := srv.Layout().SearchPostings("alice", "zebra")
		if err := c.Do(t.Context(), c.B().Set().Key(key).Value("x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		writes := []struct{ method, path, body string }{
			{"POST", msgs, `{"id":"m1","role":"user","content":"zebra"}`},
			{"PUT", msgs + "/m2", `{"role":"user","content":"zebra"}`},
			{"PUT", msgs + "/m0", `{"role":"user","content":"zebra"}`},
			{"PATCH", msgs + "/m0", `{"content":"zebra"}`},
			{"POST", "/v1/users/alice/sessions/s1/split", `{"summary":"zebra","session_id":"s2"}`},
		}
		for _, w := range writes {
			r := h.Do(t, w.method, w.path, w.body)
			if r.Status != 409 || r.Code() != "key_wrong_type" || !strings.Contains(r.Body, key) {
				t.Errorf("%s %s: got %s, want 409 key_wrong_type naming %s", w.method, w.path, r, key)
			}
		}
		p := path(t, h, "")
		if p.Total != 1 || len(p.Messages) != 1 || p.Messages[0].ID != "m0" || *p.Messages[0].Content != "hello" {
			t.Fatalf("after the refusals: got %+v, want only m0 unchanged", p)
		}
		for _, id := range []string{"m1", "m2"} {
			if rep := h.Do(t, "GET", msgs+"/"+id, ""); rep.Status != 404 {
				t.Errorf("GET %s after the refusals: got %s, want 404", id, rep)
			}
		}
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/s1", ""); !strings.Contains(rep.Body, `"message_count":1`) || !strings.Contains(rep.Body, `"status":"running"`) {
			t.Fatalf("record: got %s, want running, message_count 1", rep)
		}
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/s2", ""); rep.Status != 404 {
			t.Fatalf("continuation: got %s, want 404", rep)
		}
	})
}
