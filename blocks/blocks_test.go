package blocks_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

func start(t testing.TB, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	return sidecartest.Start(t, srv, env, sessions.Factory, usage.Factory, ttl.Factory, blocks.Factory)
}

// block is a block as the API answers it.
type block struct {
	Label       string  `json:"label"`
	Scope       string  `json:"scope"`
	Description *string `json:"description"`
	Content     string  `json:"content"`
	MaxTokens   *int    `json:"max_tokens"`
	Writable    bool    `json:"writable"`
	Position    int     `json:"position"`
	Tokens      int     `json:"tokens"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
}

// wantBlock checks rep's status and decodes its block.
func wantBlock(t *testing.T, rep sidecartest.Reply, status int) block {
	t.Helper()
	if rep.Status != status {
		t.Fatalf("got %d %s, want %d", rep.Status, rep.Body, status)
	}
	var b block
	if status < 300 && status != 204 {
		rep.JSON(t, &b)
	}
	return b
}

func wantCode(t *testing.T, rep sidecartest.Reply, status int, code string) {
	t.Helper()
	if rep.Status != status || rep.Code() != code {
		t.Fatalf("got %d %s, want %d %s", rep.Status, rep.Body, status, code)
	}
}

func list(t *testing.T, h *sidecartest.Host, path string) []block {
	t.Helper()
	rep := h.Do(t, "GET", path, "")
	if rep.Status != 200 {
		t.Fatalf("GET %s: %d %s", path, rep.Status, rep.Body)
	}
	var out struct{ Blocks []block }
	rep.JSON(t, &out)
	return out.Blocks
}

func labels(bs []block) string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Scope + ":" + b.Label
	}
	return strings.Join(out, ",")
}

// hget reads one field of a hash key.
func hget(t *testing.T, srv *redisstoretest.Server, key, field string) string {
	t.Helper()
	c := srv.Client(t)
	v, _ := c.Do(t.Context(), c.B().Hget().Key(key).Field(field).Build()).ToString()
	return v
}

func ttlOf(t *testing.T, srv *redisstoretest.Server, key string) int64 {
	t.Helper()
	c := srv.Client(t)
	n, err := c.Do(t.Context(), c.B().Ttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUserAndSessionBlocks(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		const u, s = "/v1/users/alice/blocks/", "/v1/users/alice/sessions/s1/blocks/"

		b := wantBlock(t, h.Do(t, "PUT", u+"Persona", `{"content":"You are terse.","description":"Identity","writable":false,"position":-1}`), 201)
		if b.Label != "persona" || b.Scope != "user" || b.Writable || b.Position != -1 || b.Tokens != 4 || b.MaxTokens != nil || *b.Description != "Identity" {
			t.Fatalf("created %+v", b)
		}
		wantBlock(t, h.Do(t, "PUT", u+"memory", `{"content":"likes tea","max_tokens":100}`), 201)
		// Replace: 200, created_at kept, fields replaced as a whole.
		again := wantBlock(t, h.Do(t, "PUT", u+"persona", `{"content":"You are kind."}`), 200)
		if again.CreatedAt != b.CreatedAt || !again.Writable || again.Position != 0 || again.Description != nil {
			t.Fatalf("replaced %+v, created %+v", again, b)
		}
		// The session overrides "memory" with its own block.
		wantBlock(t, h.Do(t, "PUT", s+"MEMORY", `{"content":"in this chat: likes coffee","max_tokens":50,"position":5}`), 201)
		wantBlock(t, h.Do(t, "PUT", s+"task", `{"content":"fix the bug","position":1}`), 201)

		if got, want := labels(list(t, h, "/v1/users/alice/blocks")), "user:persona,user:memory"; got != want {
			t.Errorf("user blocks %s, want %s", got, want)
		}
		if got, want := labels(list(t, h, "/v1/users/alice/sessions/s1/blocks")), "user:persona,session:task,session:memory"; got != want {
			t.Errorf("session view %s, want %s", got, want)
		}
		if got := wantBlock(t, h.Do(t, "GET", s+"memory", ""), 200); got.Scope != "session" || got.Content != "in this chat: likes coffee" {
			t.Errorf("GET session memory %+v", got)
		}
		if got := wantBlock(t, h.Do(t, "GET", s+"persona", ""), 200); got.Scope != "user" {
			t.Errorf("GET session persona %+v", got)
		}

		// Append: to the session's block on a session path, else the user's.
		got := wantBlock(t, h.Do(t, "POST", s+"memory/append", `{"content":", and tea"}`), 200)
		if got.Content != "in this chat: likes coffee, and tea" || got.Scope != "session" {
			t.Errorf("append %+v", got)
		}
		got = wantBlock(t, h.Do(t, "POST", s+"persona/append", `{"content":" Answer briefly."}`), 200)
		if got.Content != "You are kind. Answer briefly." || got.Scope != "user" || got.Tokens != 8 { // 29 code points: 8; 5 words: 7
			t.Errorf("append to the user block %+v", got)
		}
		wantCode(t, h.Do(t, "POST", s+"nope/append", `{"content":"x"}`), 404, "not_found")
		wantCode(t, h.Do(t, "POST", u+"task/append", `{"content":"x"}`), 404, "not_found")

		// Stored: one hash per scope, the session's a key of the session.
		sk, uk := l.SessionKey(blocks.SessionBlocksFamily, "alice", "s1"), l.UserKey(blocks.UserBlocksFamily, "alice")
		var sb map[string]any
		if err := json.Unmarshal([]byte(hget(t, srv, sk, "memory")), &sb); err != nil || sb["content"] != "in this chat: likes coffee, and tea" {
			t.Errorf("stored session block %v (%v)", sb, err)
		}
		if ttlOf(t, srv, sk) <= 0 || ttlOf(t, srv, uk) <= 0 {
			t.Errorf("TTLs: session blocks %d, user blocks %d", ttlOf(t, srv, sk), ttlOf(t, srv, uk))
		}
		// The session's TTL moves its blocks; deleting the session removes them.
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s1/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
			t.Fatalf("PUT ttl %d %s", rep.Status, rep.Body)
		}
		if n := ttlOf(t, srv, sk); n != -1 {
			t.Errorf("session blocks TTL after ttl 0: %d, want -1", n)
		}
		// Delete on a session path: the session's block only.
		wantBlock(t, h.Do(t, "DELETE", s+"memory", ""), 204)
		wantCode(t, h.Do(t, "DELETE", s+"memory", ""), 404, "not_found")
		if got := wantBlock(t, h.Do(t, "GET", s+"memory", ""), 200); got.Scope != "user" || got.Content != "likes tea" {
			t.Errorf("after the session's delete: %+v", got)
		}
		wantBlock(t, h.Do(t, "DELETE", "/v1/users/alice/sessions/s1", ""), 204)
		if v := hget(t, srv, sk, "task"); v != "" {
			t.Errorf("session blocks after the session's delete: %q", v)
		}
		if got := labels(list(t, h, "/v1/users/alice/sessions/s1/blocks")); got != "user:persona,user:memory" {
			t.Errorf("view after the session's delete %s", got)
		}
		wantBlock(t, h.Do(t, "DELETE", u+"persona", ""), 204)
		wantCode(t, h.Do(t, "GET", u+"persona", ""), 404, "not_found")
	})
}

// A session block write is the session's activity: it starts the session
// (a record) and moves its last activity.
func TestSessionBlockStartsSession(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/bob/sessions/new/blocks/task", `{"content":"x"}`), 201)
		rep := h.Do(t, "GET", "/v1/users/bob/sessions/new", "")
		if rep.Status != 200 || !strings.Contains(rep.Body, `"status":"running"`) {
			t.Fatalf("session after its first block: %d %s", rep.Status, rep.Body)
		}
		// A user block starts no session.
		wantBlock(t, h.Do(t, "PUT", "/v1/users/carol/blocks/a", `{"content":"x"}`), 201)
		if rep := h.Do(t, "GET", "/v1/users/carol/sessions", ""); !strings.Contains(rep.Body, `"sessions":[]`) {
			t.Errorf("sessions of carol: %s", rep.Body)
		}
	})
}

func TestBadInput(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"BLOCKS_MAX_CONTENT_BYTES": "64", "BLOCKS_MAX_PER_USER": "2", "BLOCKS_MAX_PER_SESSION": "1"})
		const u = "/v1/users/alice/blocks/"
		wantBlock(t, h.Do(t, "PUT", u+"small", `{"content":"one two","max_tokens":5}`), 201)
		for _, c := range []struct{ method, path, body, code string }{
			{"PUT", u + "a:b", `{"content":"x"}`, "invalid_id"},
			{"PUT", u + "x", `{}`, "invalid_field"},
			{"PUT", u + "x", `{"content":"x","max_tokens":0}`, "invalid_field"},
			{"PUT", u + "x", `{"content":"x","max_tokens":-3}`, "invalid_field"},
			{"PUT", u + "x", `{"content":"x","max_tokens":"5"}`, "invalid_field"},
			{"PUT", u + "x", `{"content":"x","position":2000000000}`, "invalid_field"},
			{"PUT", u + "x", `{"content":"` + strings.Repeat("x", 65) + `"}`, "invalid_field"},
			{"PUT", u + "x", `{"content":"x","extra":1}`, "unknown_field"},
			{"POST", u + "small/append", `{}`, "invalid_field"},
			{"POST", u + "small/append", `{"content":"` + strings.Repeat("y", 65) + `"}`, "invalid_field"},
		} {
			rep := h.Do(t, c.method, c.path, c.body)
			if rep.Status != 400 || rep.Code() != c.code {
				t.Errorf("%s %s %s: %d %s, want 400 %s", c.method, c.path, c.body, rep.Status, rep.Body, c.code)
			}
		}
		// Past max_tokens: 409 block_full, nothing written.
		wantCode(t, h.Do(t, "PUT", u+"small", `{"content":"one two three four","max_tokens":5}`), 409, "block_full")
		wantCode(t, h.Do(t, "POST", u+"small/append", `{"content":" three four"}`), 409, "block_full")
		if got := wantBlock(t, h.Do(t, "GET", u+"small", ""), 200); got.Content != "one two" || got.Tokens != 3 {
			t.Errorf("after refused writes %+v", got)
		}
		// Past the content size on append: 409 block_too_large.
		wantBlock(t, h.Do(t, "PUT", u+"big", `{"content":"`+strings.Repeat("z", 60)+`"}`), 201)
		wantCode(t, h.Do(t, "POST", u+"big/append", `{"content":"zzzzz"}`), 409, "block_too_large")
		// Past the count: 409 too_many_blocks; replacing stays possible.
		wantCode(t, h.Do(t, "PUT", u+"third", `{"content":"x"}`), 409, "too_many_blocks")
		wantBlock(t, h.Do(t, "PUT", u+"big", `{"content":"x"}`), 200)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s/blocks/one", `{"content":"x"}`), 201)
		wantCode(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s/blocks/two", `{"content":"x"}`), 409, "too_many_blocks")
	})
}

func TestConfig(t *testing.T) {
	for _, env := range []envconf.Env{
		{"BLOCKS_MAX_PER_USER": "0"}, {"BLOCKS_MAX_PER_SESSION": "1000"}, {"BLOCKS_MAX_CONTENT_BYTES": "x"},
	} {
		if _, err := envconf.Load[blocks.Config](env); err == nil {
			t.Errorf("%v: no error", env)
		}
	}
	c, err := envconf.Load[blocks.Config](envconf.Env{})
	if err != nil || c.MaxPerUser != 32 || c.MaxPerSession != 32 || c.MaxContentBytes != 32768 {
		t.Errorf("defaults %+v %v", c, err)
	}
}

// A key of the module holding another type (another program wrote it) is
// a 409 key_wrong_type on every route that touches it, reads included,
// and nothing is written.
func TestWrongTypedKeys(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		c := srv.Client(t)
		for _, key := range []string{l.UserKey(blocks.UserBlocksFamily, "alice"), l.SessionKey(blocks.SessionBlocksFamily, "alice", "s1"), l.SessionKey(blocks.PromptFamily, "alice", "s1")} {
			if err := c.Do(t.Context(), c.B().Set().Key(key).Value("x").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			routes := []struct{ method, path, body string }{
				{"GET", "/v1/users/alice/sessions/s1/system-prompt?frozen=true", ""},
				{"POST", "/v1/users/alice/sessions/s1/system-prompt/refresh", ""},
			}
			if key != l.SessionKey(blocks.PromptFamily, "alice", "s1") { // the block routes do not touch the prompt
				routes = append(routes,
					struct{ method, path, body string }{"PUT", "/v1/users/alice/sessions/s1/blocks/m", `{"content":"x"}`},
					struct{ method, path, body string }{"GET", "/v1/users/alice/sessions/s1/blocks", ""},
					struct{ method, path, body string }{"GET", "/v1/users/alice/sessions/s1/blocks/m", ""},
					struct{ method, path, body string }{"GET", "/v1/users/alice/sessions/s1/tools", ""},
					struct{ method, path, body string }{"POST", "/v1/users/alice/sessions/s1/blocks/m/append", `{"content":"x"}`},
					struct{ method, path, body string }{"POST", "/v1/users/alice/sessions/s1/tools/set_context", `{"arguments":{"label":"m","content":"x"}}`},
				)
			}
			for _, r := range routes {
				rep := h.Do(t, r.method, r.path, r.body)
				if rep.Status != 409 || rep.Code() != "key_wrong_type" {
					t.Errorf("%s a string: %s %s: %d %s, want 409 key_wrong_type", key, r.method, r.path, rep.Status, rep.Body)
				}
			}
			if v, _ := c.Do(t.Context(), c.B().Get().Key(key).Build()).ToString(); v != "x" {
				t.Errorf("%s: %q after the refused calls", key, v)
			}
			if n, _ := c.Do(t.Context(), c.B().Exists().Key(l.Session("alice", "s1").Record).Build()).AsInt64(); n != 0 {
				t.Errorf("%s a string: a session record was written", key)
			}
			c.Do(t.Context(), c.B().Del().Key(key).Build())
		}
	})
}

// Appends find the stored content by its place in the JSON the sidecar
// writes, not by scanning it: text that looks like the fields around it
// stays text, and a block in another field order (written by hand) is
// still appended to, by the full scan.
func TestAppendKeepsJSONIntact(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const path = "/v1/users/alice/blocks/tricky"
		tricky := `a","max_tokens":1,"x":"\"content\":\"\"` + "\\"
		body, _ := json.Marshal(map[string]any{"content": tricky, "description": `"content":"`, "max_tokens": 500})
		wantBlock(t, h.Do(t, "PUT", path, string(body)), 201)
		piece, _ := json.Marshal(map[string]string{"content": `","max_tokens":2}` + "\\"})
		got := wantBlock(t, h.Do(t, "POST", path+"/append", string(piece)), 200)
		if want := tricky + `","max_tokens":2}` + "\\"; got.Content != want || *got.MaxTokens != 500 || *got.Description != `"content":"` {
			t.Fatalf("after the append: %+v, want content %q", got, want)
		}

		l := srv.Layout()
		c := srv.Client(t)
		hand := `{"counts": "3,3,1,1,1", "content": "abc", "writable": true, "position": 0, "label": "hand", "tokens": 1, "max_tokens": null, "description": null, "created_at": 1, "updated_at": 1}`
		if err := c.Do(t.Context(), c.B().Hset().Key(l.UserKey(blocks.UserBlocksFamily, "alice")).FieldValue().FieldValue("hand", hand).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		got = wantBlock(t, h.Do(t, "POST", "/v1/users/alice/blocks/hand/append", `{"content":" def"}`), 200)
		if got.Content != "abc def" || got.Tokens != 3 {
			t.Errorf("hand-written block after an append: %+v", got)
		}
	})
}
