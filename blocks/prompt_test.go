package blocks_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/tokens"
)

// goldenPrompt is the rendering of the blocks TestSystemPromptGolden
// writes, byte for byte: position order (soul 0, memory 1, notes 2), the
// empty block skipped, both brackets on one block, 2/80 = 2.5 % rounded up.
const goldenPrompt = "══════════════════════════════════════════════\n" +
	"SOUL (Identity) [readonly]\n" +
	"══════════════════════════════════════════════\n" +
	"You are a helpful assistant.\n" +
	"══════════════════════════════════════════════\n" +
	"MEMORY (Learned facts) [1% — 11/1100 tokens]\n" +
	"══════════════════════════════════════════════\n" +
	"User likes coffee.\n" +
	"User prefers dark roast.\n" +
	"══════════════════════════════════════════════\n" +
	"NOTES [3% — 2/80 tokens] [readonly]\n" +
	"══════════════════════════════════════════════\n" +
	"hi"

func TestSystemPromptGolden(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const s = "/v1/users/alice/sessions/s1/blocks/"
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/soul", `{"content":"You are a helpful assistant.","description":"Identity","writable":false}`), 201)
		wantBlock(t, h.Do(t, "PUT", s+"scratch", `{"content":"","description":"empty: skipped"}`), 201)
		wantBlock(t, h.Do(t, "PUT", s+"notes", `{"content":"hi","max_tokens":80,"writable":false,"position":2}`), 201)
		wantBlock(t, h.Do(t, "PUT", s+"memory", `{"content":"User likes coffee.","description":"Learned facts","max_tokens":1100,"position":1}`), 201)
		wantBlock(t, h.Do(t, "POST", s+"memory/append", `{"content":"\nUser prefers dark roast."}`), 200)

		rep := h.Do(t, "GET", "/v1/users/alice/sessions/s1/system-prompt", "")
		if rep.Status != 200 || rep.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("GET system-prompt: %d %q", rep.Status, rep.Header.Get("Content-Type"))
		}
		if rep.Body != goldenPrompt {
			t.Fatalf("prompt\n%q\nwant\n%q", rep.Body, goldenPrompt)
		}
		if n := strings.Count(goldenPrompt, strings.Repeat("═", 46)+"\n"); n != 6 || utf8.RuneCountInString(strings.Split(goldenPrompt, "\n")[0]) != 46 {
			t.Fatalf("golden bars: %d", n)
		}
		var j struct {
			Prompt   string
			Tokens   int
			FrozenAt *string `json:"frozen_at"`
		}
		h.Do(t, "GET", "/v1/users/alice/sessions/s1/system-prompt?format=json", "").JSON(t, &j)
		if j.Prompt != goldenPrompt || j.Tokens != tokens.Estimate(goldenPrompt) || j.FrozenAt != nil {
			t.Errorf("json: %d tokens, frozen_at %v, prompt %q", j.Tokens, j.FrozenAt, j.Prompt)
		}
		// A session without blocks of its own renders the user's.
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/other/system-prompt", ""); !strings.HasSuffix(rep.Body, "SOUL (Identity) [readonly]\n"+strings.Repeat("═", 46)+"\nYou are a helpful assistant.") {
			t.Errorf("other session: %q", rep.Body)
		}
		if rep := h.Do(t, "GET", "/v1/users/nobody/sessions/x/system-prompt", ""); rep.Status != 200 || rep.Body != "" {
			t.Errorf("no blocks: %d %q", rep.Status, rep.Body)
		}
	})
}

type promptJSON struct {
	Prompt   string  `json:"prompt"`
	Tokens   int     `json:"tokens"`
	FrozenAt *string `json:"frozen_at"`
}

func getPrompt(t *testing.T, h *sidecartest.Host, method, path string) promptJSON {
	t.Helper()
	rep := h.Do(t, method, path, "")
	if rep.Status != 200 {
		t.Fatalf("%s %s: %d %s", method, path, rep.Status, rep.Body)
	}
	var p promptJSON
	rep.JSON(t, &p)
	return p
}

// ?frozen=true keeps the first rendering until a refresh, whatever the
// blocks do; the plain GET renders them as they are.
func TestFrozenPrompt(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const p = "/v1/users/alice/sessions/s1/system-prompt"
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/memory", `{"content":"first"}`), 201)
		first := getPrompt(t, h, "GET", p+"?frozen=true&format=json")
		if !strings.HasSuffix(first.Prompt, "\nfirst") || first.FrozenAt == nil || first.Tokens != tokens.Estimate(first.Prompt) {
			t.Fatalf("first frozen %+v", first)
		}
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/memory", `{"content":"second"}`), 200)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/persona", `{"content":"kind"}`), 201)
		if again := getPrompt(t, h, "GET", p+"?frozen=true&format=json"); again.Prompt != first.Prompt || *again.FrozenAt != *first.FrozenAt {
			t.Errorf("frozen again %+v, want %+v", again, first)
		}
		if rep := h.Do(t, "GET", p+"?frozen=true", ""); rep.Body != first.Prompt {
			t.Errorf("frozen text %q, want %q", rep.Body, first.Prompt)
		}
		if live := getPrompt(t, h, "GET", p+"?format=json"); !strings.Contains(live.Prompt, "\nsecond\n") || live.FrozenAt != nil {
			t.Errorf("live %+v", live)
		}
		fresh := getPrompt(t, h, "POST", p+"/refresh?format=json")
		if fresh.Prompt != live(t, h) || fresh.FrozenAt == nil || *fresh.FrozenAt < *first.FrozenAt {
			t.Errorf("refreshed %+v (first %+v)", fresh, first)
		}
		if got := getPrompt(t, h, "GET", p+"?frozen=true&format=json"); got.Prompt != fresh.Prompt || *got.FrozenAt != *fresh.FrozenAt {
			t.Errorf("frozen after refresh %+v, want %+v", got, fresh)
		}
		// Stored in a key of the session, with its TTL.
		k := srv.Layout().SessionKey(blocks.PromptFamily, "alice", "s1")
		if hget(t, srv, k, "prompt") != fresh.Prompt || ttlOf(t, srv, k) <= 0 {
			t.Errorf("stored prompt %q, TTL %d", hget(t, srv, k, "prompt"), ttlOf(t, srv, k))
		}
		for _, q := range []string{"?format=xml", "?frozen=yes"} {
			if rep := h.Do(t, "GET", p+q, ""); rep.Status != 400 || rep.Code() != "invalid_query" {
				t.Errorf("%s: %d %s", q, rep.Status, rep.Body)
			}
		}
	})
}

func live(t *testing.T, h *sidecartest.Host) string {
	t.Helper()
	return h.Do(t, "GET", "/v1/users/alice/sessions/s1/system-prompt", "").Body
}
