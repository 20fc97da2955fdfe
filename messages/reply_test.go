package messages_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// TestIDsThatSpellTags: every answer of the messages scripts starts with
// its tag (lua/lib/reply.lua), so messages whose ids are the tags' words
// are appended, read (one, a path, children, a cursor on them), popped and
// deleted like any other: none is taken for a refusal, a missing message
// or a done write.
func TestIDsThatSpellTags(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		tags := []string{"refused", "missing", "ok", "dup", "index_build"}
		for _, id := range tags { // a chain: each the child of the one before
			m := post(t, h, `{"id":"`+id+`","role":"user","content":"the message `+id+`"}`, 201)
			if m.ID != id {
				t.Fatalf("appended %s: got %+v", id, m)
			}
		}
		// a retry answers the stored message, written nothing
		if m := post(t, h, `{"id":"refused","role":"user","content":"the message refused","parent_id":null}`, 200); m.ID != "refused" {
			t.Fatalf("retry of refused: got %+v", m)
		}
		for i, id := range tags {
			var m msg
			rep := h.Do(t, "GET", msgs+"/"+id, "")
			if rep.Status != 200 {
				t.Fatalf("GET %s: got %s", id, rep)
			}
			rep.JSON(t, &m)
			if m.ID != id || m.Content == nil || *m.Content != "the message "+id {
				t.Fatalf("GET %s: got %s", id, rep)
			}
			var kids page
			rep = h.Do(t, "GET", msgs+"/"+id+"/children", "")
			if rep.Status != 200 {
				t.Fatalf("children of %s: got %s", id, rep)
			}
			rep.JSON(t, &kids)
			want := ""
			if i+1 < len(tags) {
				want = tags[i+1]
			}
			if got := ids(kids); got != want {
				t.Fatalf("children of %s: got %q, want %q", id, got, want)
			}
		}
		if got := ids(path(t, h, "")); got != strings.Join(tags, ",") {
			t.Fatalf("path: got %s", got)
		}
		if got := ids(path(t, h, "leaf=ok&after=refused")); got != "missing,ok" {
			t.Fatalf("path to ok after refused: got %s, want missing,ok", got)
		}
		if p := path(t, h, "limit=1&order=desc"); ids(p) != "index_build" || p.NextCursor == nil || *p.NextCursor != "index_build" {
			t.Fatalf("first page, newest first: got %s (next %v)", ids(p), p.NextCursor)
		}

		// the scripts' own answer: the tag first, then the message
		st := sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600})
		msg, err := st.Exec(t.Context(), messages.MessagesRead, "alice", "s1", "one", "refused")
		if err != nil {
			t.Fatal(err)
		}
		arr, err := msg.ToArray()
		if err != nil || len(arr) != 2 {
			t.Fatalf("read of refused: got %v (%v), want {'ok', message}", msg, err)
		}
		if tag, err := arr[0].ToString(); err != nil || tag != "ok" {
			t.Fatalf("read of refused: tag %q (%v), want ok", tag, err)
		}

		rep := h.Do(t, "POST", msgs+"/pop", "")
		if rep.Status != 200 || !strings.Contains(rep.Body, `"id":"index_build"`) {
			t.Fatalf("pop: got %s, want index_build", rep)
		}
		// the deepest first; then each id is gone, and said so
		for i := len(tags) - 2; i >= 0; i-- {
			id := tags[i]
			if i == 0 {
				// with a child, refused until the subtree goes with it
				post(t, h, `{"id":"dup2","role":"user","content":"x","parent_id":"refused"}`, 201)
				if rep := h.Do(t, "DELETE", msgs+"/refused", ""); rep.Status != 409 || rep.Code() != "has_children" {
					t.Fatalf("DELETE refused with a child: got %s, want 409 has_children", rep)
				}
				if rep := h.Do(t, "DELETE", msgs+"/refused?subtree=true", ""); rep.Status != 204 {
					t.Fatalf("DELETE refused with its subtree: got %s, want 204", rep)
				}
			} else if rep := h.Do(t, "DELETE", msgs+"/"+id, ""); rep.Status != 204 {
				t.Fatalf("DELETE %s: got %s, want 204", id, rep)
			}
			rep := h.Do(t, "GET", msgs+"/"+id, "")
			if rep.Status != 404 || !strings.Contains(rep.Body, "has no message "+id) {
				t.Fatalf("GET %s after its delete: got %s, want 404", id, rep)
			}
			if rep := h.Do(t, "DELETE", msgs+"/"+id, ""); rep.Status != 404 || !strings.Contains(rep.Body, "has no message "+id) {
				t.Fatalf("DELETE %s again: got %s, want 404", id, rep)
			}
			if rep := h.Do(t, "GET", msgs+"/"+id+"/children", ""); rep.Status != 404 {
				t.Fatalf("children of %s after its delete: got %s, want 404", id, rep)
			}
		}
		if p := path(t, h, ""); len(p.Messages) != 0 || p.Total != 0 {
			t.Fatalf("path after every delete: got %s (total %d)", ids(p), p.Total)
		}
	})
}
