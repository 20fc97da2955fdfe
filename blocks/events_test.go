package blocks_test

import (
	"github.com/agentsidecar/agentsidecar/envconf"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

func ofType(evs []redisstoretest.StreamEvent, typ string) []redisstoretest.StreamEvent {
	var out []redisstoretest.StreamEvent
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// Every block write emits one block_changed, in its own script: a session
// block's on the session's stream, a user block's on the user's stream
// only (a user-block change is not copied into the user's sessions). The
// data is the block as clients read it; a refused write emits nothing.
func TestBlockWritesEmitBlockChanged(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_EVENTS": "always"}) // reads what every write recorded
		l, c := srv.Layout(), srv.Client(t)
		const s = "/v1/users/alice/sessions/s1"
		wantBlock(t, h.Do(t, "PUT", s+"/blocks/notes", `{"content":"first","max_tokens":10}`), 201)
		wantBlock(t, h.Do(t, "POST", s+"/blocks/notes/append", `{"content":" second"}`), 200)
		wantCode(t, h.Do(t, "POST", s+"/blocks/notes/append", `{"content":"`+strings.Repeat("word ", 40)+`"}`), 409, "block_full")
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/persona", `{"content":"helpful","writable":false}`), 201)
		if rep := h.Do(t, "POST", s+"/tools/set_context", `{"arguments":{"label":"notes","content":"third","action":"replace"}}`); rep.Status != 200 {
			t.Fatalf("set_context: %d %s", rep.Status, rep.Body)
		}
		if rep := h.Do(t, "DELETE", s+"/blocks/notes", ""); rep.Status != 204 {
			t.Fatalf("DELETE: %d %s", rep.Status, rep.Body)
		}

		sess := ofType(redisstoretest.StreamEvents(t, c, l.SessionEvents("alice", "s1")), "block_changed")
		if len(sess) != 4 {
			t.Fatalf("session stream: %d block_changed events, want 4 (put, append, set_context, delete): %+v", len(sess), sess)
		}
		for i, want := range []string{"first", "first second", "third"} {
			d := sess[i].Data
			if d["label"] != "notes" || d["scope"] != "session" || d["content"] != want || d["counts"] != nil {
				t.Errorf("event %d: %v, want the session block notes with content %q and no counts", i, d, want)
			}
			if _, ok := d["updated_at"].(string); !ok {
				t.Errorf("event %d: updated_at %v, want an RFC 3339 string", i, d["updated_at"])
			}
		}
		if d := sess[3].Data; d["label"] != "notes" || d["scope"] != "session" || d["deleted"] != true {
			t.Errorf("delete event: %v, want {label notes, scope session, deleted true}", d)
		}
		user := ofType(redisstoretest.StreamEvents(t, c, l.UserEvents("alice")), "block_changed")
		if len(user) != 1 || user[0].Data["label"] != "persona" || user[0].Data["scope"] != "user" || user[0].Data["writable"] != false {
			t.Errorf("user stream: %+v, want one block_changed of the user block persona", user)
		}
		if ttl := ttlOf(t, srv, l.UserEvents("alice")); ttl <= 0 {
			t.Errorf("user stream TTL %d, want one", ttl)
		}
	})
}

// A user event stream of another type (another program's key) refuses a
// block write before anything is written: the event could not be added.
func TestWrongTypedUserStreamRefusesBlockWrites(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l, c := srv.Layout(), srv.Client(t)
		if err := c.Do(t.Context(), c.B().Set().Key(l.UserEvents("alice")).Value("x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		wantCode(t, h.Do(t, "PUT", "/v1/users/alice/blocks/persona", `{"content":"helpful"}`), 409, "key_wrong_type")
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(l.UserKey(blocks.UserBlocksFamily, "alice")).Build()).AsInt64(); n != 0 {
			t.Errorf("the user block was written before the refusal")
		}
	})
}
