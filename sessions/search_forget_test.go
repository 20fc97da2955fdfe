package sessions_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// redisText is every key of the server with what it holds: names,
// fields, values, members and stream entries, one line each, per key.
func redisText(t *testing.T, srv *redisstoretest.Server) map[string]string {
	t.Helper()
	ctx, c := t.Context(), srv.Client(t)
	keys := srv.Keys(t, "*")
	out := map[string]string{}
	for _, k := range keys {
		typ, _ := c.Do(ctx, c.B().Type().Key(k).Build()).ToString()
		var parts []string
		switch typ {
		case "string":
			v, _ := c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
			parts = []string{v}
		case "list":
			parts, _ = c.Do(ctx, c.B().Lrange().Key(k).Start(0).Stop(-1).Build()).AsStrSlice()
		case "hash":
			m, _ := c.Do(ctx, c.B().Hgetall().Key(k).Build()).AsStrMap()
			for f, v := range m {
				parts = append(parts, f, v)
			}
		case "zset", "set":
			if typ == "zset" {
				parts, _ = c.Do(ctx, c.B().Zrange().Key(k).Min("0").Max("-1").Build()).AsStrSlice()
			} else {
				parts, _ = c.Do(ctx, c.B().Smembers().Key(k).Build()).AsStrSlice()
			}
		case "stream":
			es, _ := c.Do(ctx, c.B().Xrange().Key(k).Start("-").End("+").Build()).AsXRange()
			for _, e := range es {
				for f, v := range e.FieldValues {
					parts = append(parts, f, v)
				}
			}
		}
		out[k] = strings.Join(parts, "\n")
	}
	return out
}

// TestSearchDeleteForgets: after DELETE of a session, no key name, field,
// value or member in Redis holds a word only that session used, or its id,
// or an id of its entries and messages, and none holds a word only a
// deleted entry or message used (event streams aside: the deleted
// session's `deleted` tombstone, kept 300 s for readers, and a live
// session's history belong to the events module); the other session's
// documents are still found. Both indexed kinds, with the eager index and
// with the on-demand index a search built.
func TestSearchDeleteForgets(t *testing.T) {
	for _, mode := range []string{"eager", "on-demand"} {
		t.Run(mode, func(t *testing.T) {
			redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
				h := startSearch(t, srv, envconf.Env{"SEARCH_INDEX": mode})
				gone, kept := forgetWrites(t, h)
				// the index exists (built by this search under on-demand)
				if rep := h.Do(t, "GET", "/v1/users/alice/search?q=diabetes", ""); rep.Status != 200 || !strings.Contains(rep.Body, "qa-gone-1") {
					t.Fatalf("before the delete: %s", rep)
				}
				if rep := h.Do(t, "GET", "/v1/users/alice/search?q=quokka+platypus", ""); rep.Status != 200 || !strings.Contains(rep.Body, "qa-quokka") || !strings.Contains(rep.Body, "msg-platypus") {
					t.Fatalf("before the deletes: %s", rep)
				}
				if rep := h.Do(t, "GET", "/v1/users/alice/search?q=wombat+numbat", ""); rep.Status != 200 || !strings.Contains(rep.Body, "msg-numbat") {
					t.Fatalf("before the deletes: %s", rep)
				}
				// (a PIN of letters and digits: four digits alone turn up in
				// other sessions' µs timestamps now and then)
				secrets := []string{"quokka", "platypus", "wombat", "numbat", "termit", "burrow", "chat-gone", "qa-gone", "msg-gone", "diabet", "insulin", "medic", "bank", "k4321q", "secret", "zanzibar", "holiday"}
				// each is in the index before the deletes (a word never
				// written would pass the check below whatever the deletes do)
				before := redisText(t, srv)
				for _, w := range secrets {
					found := false
					for k, text := range before {
						if strings.HasPrefix(k, "agent_search") && (strings.Contains(k, w) || strings.Contains(text, w)) {
							found = true
						}
					}
					if !found {
						t.Errorf("%q is in no search key before the deletes", w)
					}
				}
				for _, p := range []string{gone, kept + "/entries/qa-quokka", kept + "/messages/msg-platypus", kept + "/messages/msg-wombat?subtree=true"} {
					if rep := h.Do(t, "DELETE", p, ""); rep.Status != 204 && rep.Status != 200 {
						t.Fatalf("DELETE %s: %s", p, rep)
					}
				}
				for k, text := range redisText(t, srv) {
					if strings.HasPrefix(k, "agent_session_events:") {
						continue // the deleted session's tombstone; the kept one's history (the events module's)
					}
					for _, w := range secrets {
						if strings.Contains(k, w) || strings.Contains(text, w) {
							t.Errorf("%q still in Redis: key %s holds %.300q", w, k, text)
						}
					}
				}
				if rep := h.Do(t, "GET", "/v1/users/alice/search?q=shared", ""); rep.Status != 200 || !strings.Contains(rep.Body, "msg-kept") || strings.Contains(rep.Body, "msg-gone") {
					t.Errorf("after the delete: %s", rep)
				}
				if n := srv.DBSize(t); n == 0 {
					t.Error("nothing left at all")
				}
			})
		})
	}
}

// forgetWrites writes TestSearchDeleteForgets's sessions: chat-gone (two
// entries, a message) and chat-kept (four messages, one a reply, and an
// entry). It answers their paths.
func forgetWrites(t *testing.T, h *sidecartest.Host) (gone, kept string) {
	t.Helper()
	gone, kept = "/v1/users/alice/sessions/chat-gone", "/v1/users/alice/sessions/chat-kept"
	for i, body := range []string{
		`{"qa_id":"qa-gone-1","question":"my diabetes medication","answer":"take insulin"}`,
		`{"qa_id":"qa-gone-2","question":"bank pin k4321q","answer":"keep the secret"}`,
	} {
		if rep := h.Do(t, "POST", gone+"/entries", body); rep.Status != 201 {
			t.Fatalf("entry %d: %s", i, rep)
		}
	}
	if rep := h.Do(t, "POST", gone+"/messages", `{"id":"msg-gone","role":"user","content":"zanzibar holiday shared"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	for _, body := range []string{`{"id":"msg-kept","role":"user","content":"weather shared"}`,
		`{"id":"msg-platypus","role":"user","content":"platypus eggs"}`,
		`{"id":"msg-wombat","role":"user","content":"wombat burrow","parent_id":null}`,
		`{"id":"msg-numbat","role":"user","content":"numbat termites","parent_id":"msg-wombat"}`} {
		if rep := h.Do(t, "POST", kept+"/messages", body); rep.Status != 201 {
			t.Fatal(rep)
		}
	}
	if rep := h.Do(t, "POST", kept+"/entries", `{"qa_id":"qa-quokka","question":"quokka facts","answer":"shared"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	return gone, kept
}
