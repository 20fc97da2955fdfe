package blocks_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A session key or record field that finish_write reads, corrupted by
// another program, refuses a session block write before it writes: 409
// key_wrong_type, the block not stored, no event (Redis does not roll back
// a script that fails half-way).
func TestSessionChecksBeforeWrite(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		c := srv.Client(t)
		k := l.Session("alice", "s1")
		corrupt := []struct {
			name string
			set  func() error
		}{
			{"entries list a string", func() error { return c.Do(t.Context(), c.B().Set().Key(k.Entries).Value("x").Build()).Error() }},
			{"slid_at not a number", func() error {
				return c.Do(t.Context(), c.B().Hset().Key(k.Record).FieldValue().FieldValue("status", "running").FieldValue("slid_at", "x").Build()).Error()
			}},
			{"ttl_seconds not a number", func() error {
				return c.Do(t.Context(), c.B().Hset().Key(k.Record).FieldValue().FieldValue("status", "running").FieldValue("ttl_seconds", "x").Build()).Error()
			}},
		}
		for _, bad := range corrupt {
			if err := bad.set(); err != nil {
				t.Fatal(err)
			}
			// a block to append to, written by hand before the corruption
			// could stop the sidecar's own PUT
			hand := `{"label":"m","description":null,"content":"a","max_tokens":null,"writable":true,"position":0,"tokens":1,"counts":"1,1,1,1,1","created_at":1,"updated_at":1}`
			if err := c.Do(t.Context(), c.B().Hset().Key(l.SessionKey(blocks.SessionBlocksFamily, "alice", "s1")).FieldValue().FieldValue("m", hand).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			routes := []struct{ method, path, body string }{
				{"PUT", "/v1/users/alice/sessions/s1/blocks/n", `{"content":"x"}`},
				{"POST", "/v1/users/alice/sessions/s1/blocks/m/append", `{"content":"x"}`},
				{"POST", "/v1/users/alice/sessions/s1/tools/set_context", `{"arguments":{"label":"m","content":"x"},"tool_call_id":"c1"}`},
				{"DELETE", "/v1/users/alice/sessions/s1/blocks/m", ""},
				{"POST", "/v1/users/alice/sessions/s1/system-prompt/refresh", ""},
			}
			for _, r := range routes {
				rep := h.Do(t, r.method, r.path, r.body)
				if rep.Status != 409 || rep.Code() != "key_wrong_type" {
					t.Errorf("%s: %s %s: got %d %s, want 409 key_wrong_type", bad.name, r.method, r.path, rep.Status, rep.Body)
				}
			}
			got, _ := c.Do(t.Context(), c.B().Hgetall().Key(l.SessionKey(blocks.SessionBlocksFamily, "alice", "s1")).Build()).AsStrMap()
			if len(got) != 1 || got["m"] != hand {
				t.Errorf("%s: session blocks %v after the refused calls, want only the hand-written m", bad.name, got)
			}
			for _, key := range []string{l.SessionEvents("alice", "s1"), l.SessionKey(blocks.ToolCallsFamily, "alice", "s1"), l.SessionKey(blocks.PromptFamily, "alice", "s1")} {
				if n, _ := c.Do(t.Context(), c.B().Exists().Key(key).Build()).AsInt64(); n != 0 {
					t.Errorf("%s: %s written by a refused call", bad.name, key)
				}
			}
			c.Do(t.Context(), c.B().Flushall().Build())
		}
	})
}

// A stored block whose created_at is not the integer the sidecar writes
// (another program wrote it) is refused by an append before anything is
// written (409 stored_value_invalid), and replaced whole by a PUT (a new
// created_at): neither stores the block and then fails on its event.
func TestHandWrittenCreatedAt(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_EVENTS": "always"}) // reads what every write recorded
		l := srv.Layout()
		c := srv.Client(t)
		hand := `{"label":"m","description":null,"content":"a","max_tokens":null,"writable":true,"position":0,"tokens":1,"counts":"1,1,1,1,1","created_at":"yesterday","updated_at":1}`
		for _, scope := range []struct{ key, path string }{
			{l.UserKey(blocks.UserBlocksFamily, "alice"), "/v1/users/alice/blocks/m"},
			{l.SessionKey(blocks.SessionBlocksFamily, "alice", "s1"), "/v1/users/alice/sessions/s1/blocks/m"},
		} {
			if err := c.Do(t.Context(), c.B().Hset().Key(scope.key).FieldValue().FieldValue("m", hand).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			wantCode(t, h.Do(t, "POST", scope.path+"/append", `{"content":"b"}`), 409, "stored_value_invalid")
			if got, _ := c.Do(t.Context(), c.B().Hget().Key(scope.key).Field("m").Build()).ToString(); got != hand {
				t.Errorf("%s after a refused append: %s, want the hand-written block unchanged", scope.path, got)
			}
			b := wantBlock(t, h.Do(t, "PUT", scope.path, `{"content":"new"}`), 200)
			if b.Content != "new" || b.CreatedAt == "" {
				t.Errorf("%s replaced: %+v, want content new with a created_at", scope.path, b)
			}
			if got := wantBlock(t, h.Do(t, "GET", scope.path, ""), 200); got.Content != "new" {
				t.Errorf("%s read after the replace: %+v", scope.path, got)
			}
		}
		evs := ofType(redisstoretest.StreamEvents(t, c, l.UserEvents("alice")), "block_changed")
		evs = append(evs, ofType(redisstoretest.StreamEvents(t, c, l.SessionEvents("alice", "s1")), "block_changed")...)
		if len(evs) != 2 {
			t.Errorf("block_changed events %+v, want one per replace", evs)
		}
	})
}

// A stored block whose content is not one JSON string (another program
// wrote a bare quote into it) is refused by an append before anything is
// written (409 stored_value_invalid): the append would splice the piece
// into text that is no JSON, store it and then fail on its event.
func TestHandWrittenContentNotAString(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		c := srv.Client(t)
		hand := `{"label":"m","description":null,"content":"a"b","max_tokens":null,"writable":true,"position":0,"tokens":1,"counts":"1,1,1,1,1","created_at":1,"updated_at":1}`
		for _, scope := range []struct{ key, events, path string }{
			{l.UserKey(blocks.UserBlocksFamily, "alice"), l.UserEvents("alice"), "/v1/users/alice/blocks/m"},
			{l.SessionKey(blocks.SessionBlocksFamily, "alice", "s1"), l.SessionEvents("alice", "s1"), "/v1/users/alice/sessions/s1/blocks/m"},
		} {
			if err := c.Do(t.Context(), c.B().Hset().Key(scope.key).FieldValue().FieldValue("m", hand).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			before := redisstoretest.Snapshot(t, c, scope.key, scope.events)
			if rep := h.Do(t, "POST", scope.path+"/append", `{"content":"c"}`); rep.Status != 409 || rep.Code() != "stored_value_invalid" {
				t.Errorf("%s: append: %d %s, want 409 stored_value_invalid", scope.path, rep.Status, rep.Body)
			}
			if after := redisstoretest.Snapshot(t, c, scope.key, scope.events); !slices.Equal(after, before) {
				t.Errorf("%s: a refused append changed Redis:\n%q\nwas\n%q", scope.path, after, before)
			}
		}
	})
}

// A key of the module that another program removed while the session
// lives, or that a delete emptied, gets the session's TTL when a write
// makes it again (the session already had its family: the write notes the
// key made, session.made, or adds the family anew), never a key without
// expiry that would outlive the session.
func TestKeysMadeAnewGetTheSessionTTL(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "600"})
		l, c := srv.Layout(), srv.Client(t)
		const s = "/v1/users/alice/sessions/s1"
		keys := []string{l.SessionKey(blocks.SessionBlocksFamily, "alice", "s1"), l.SessionKey(blocks.ToolCallsFamily, "alice", "s1"),
			l.SessionKey(blocks.PromptFamily, "alice", "s1")}
		write := func(round int) {
			t.Helper()
			wantBlock(t, h.Do(t, "PUT", s+"/blocks/notes", `{"content":"x"}`), 201) // new each round
			if rep := h.Do(t, "POST", s+"/tools/set_context", fmt.Sprintf(`{"arguments":{"label":"notes","content":"y"},"tool_call_id":"c%d"}`, round)); rep.Status != 200 {
				t.Fatalf("set_context: %d %s", rep.Status, rep.Body)
			}
			if rep := h.Do(t, "POST", s+"/system-prompt/refresh", ""); rep.Status != 200 {
				t.Fatalf("refresh: %d %s", rep.Status, rep.Body)
			}
			for _, k := range keys {
				if ttl := ttlOf(t, srv, k); ttl <= 0 || ttl > 600 {
					t.Errorf("round %d: %s TTL %d, want the session's", round, k, ttl)
				}
			}
		}
		write(0)
		for _, k := range keys {
			c.Do(t.Context(), c.B().Del().Key(k).Build())
		}
		write(1)
		// the session's last block deleted: the blocks hash is gone, and
		// made again by the next put
		wantBlock(t, h.Do(t, "DELETE", s+"/blocks/notes", ""), 204)
		wantBlock(t, h.Do(t, "PUT", s+"/blocks/notes", `{"content":"z"}`), 201)
		if ttl := ttlOf(t, srv, keys[0]); ttl <= 0 || ttl > 600 {
			t.Errorf("blocks made again after the last was deleted: TTL %d, want the session's", ttl)
		}
	})
}
