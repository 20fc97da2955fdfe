package client_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/client"
)

// everyBlocksOperation calls every operation of the blocks module (for
// TestEveryOperation).
func everyBlocksOperation(t *testing.T, c *client.Client, u string) {
	t.Helper()
	ctx := t.Context()
	const s = "blocks-1"
	b := must(c.PutUserBlock(ctx, u, "Soul", client.PutBlockRequest{Content: "Be kind.", Writable: new(false)})).ok(t)
	if !b.Created || b.Label != "soul" || b.Scope != "user" || b.Writable || b.Tokens != 3 || b.CreatedAt.IsZero() {
		t.Fatalf("PutUserBlock: %+v", b)
	}
	if b := must(c.PutUserBlock(ctx, u, "memory", client.PutBlockRequest{Content: "likes tea", MaxTokens: new(100)})).ok(t); !b.Created || *b.MaxTokens != 100 {
		t.Fatalf("PutUserBlock memory: %+v", b)
	}
	if b := must(c.AppendUserBlock(ctx, u, "memory", ", green")).ok(t); b.Content != "likes tea, green" {
		t.Fatalf("AppendUserBlock: %+v", b)
	}
	if b := must(c.GetUserBlock(ctx, u, "memory")).ok(t); b.Content != "likes tea, green" {
		t.Fatalf("GetUserBlock: %+v", b)
	}
	if l := must(c.ListUserBlocks(ctx, u)).ok(t); len(l.Blocks) != 2 {
		t.Fatalf("ListUserBlocks: %+v", l)
	}
	if b := must(c.PutSessionBlock(ctx, u, s, "task", client.PutBlockRequest{Content: "fix", Position: new(1)})).ok(t); !b.Created || b.Scope != "session" {
		t.Fatalf("PutSessionBlock: %+v", b)
	}
	if b := must(c.PutSessionBlock(ctx, u, s, "task", client.PutBlockRequest{Content: "fix it", Position: new(1)})).ok(t); b.Created {
		t.Fatalf("PutSessionBlock replace: %+v", b)
	}
	if b := must(c.AppendSessionBlock(ctx, u, s, "task", " now")).ok(t); b.Content != "fix it now" {
		t.Fatalf("AppendSessionBlock: %+v", b)
	}
	if b := must(c.GetSessionBlock(ctx, u, s, "memory")).ok(t); b.Scope != "user" {
		t.Fatalf("GetSessionBlock: %+v", b)
	}
	if l := must(c.ListSessionBlocks(ctx, u, s)).ok(t); len(l.Blocks) != 3 || l.Blocks[2].Label != "task" {
		t.Fatalf("ListSessionBlocks: %+v", l)
	}
	p := must(c.GetSystemPrompt(ctx, u, s, true)).ok(t)
	if !strings.Contains(p.Prompt, "SOUL [readonly]") || p.FrozenAt == nil || p.Tokens == 0 {
		t.Fatalf("GetSystemPrompt: %+v", p)
	}
	if live := must(c.GetSystemPrompt(ctx, u, s, false)).ok(t); live.FrozenAt != nil || live.Prompt != p.Prompt {
		t.Fatalf("GetSystemPrompt live: %+v", live)
	}
	if r := must(c.RefreshSystemPrompt(ctx, u, s)).ok(t); r.FrozenAt == nil || r.Prompt != p.Prompt {
		t.Fatalf("RefreshSystemPrompt: %+v", r)
	}
	// a turn of the conversation, so that the session has something to
	// search: under SEARCH_INDEX=on-demand (the default) session_search is
	// offered once the user has an index or the session holds messages or
	// entries (the tool's first call builds the index)
	must(c.AppendEntry(ctx, u, s, client.AppendEntryRequest{Question: "What do I like?", Answer: "Tea"})).ok(t)
	for _, f := range []string{client.ToolFormatOpenAI, client.ToolFormatAnthropic} {
		tl := must(c.ListTools(ctx, u, s, f)).ok(t)
		var first map[string]any
		// set_context, search_context, and session_search
		if len(tl.Tools) != 3 || !strings.Contains(string(tl.Tools[2]), "session_search") || json.Unmarshal(tl.Tools[0], &first) != nil {
			t.Fatalf("ListTools %s: %s", f, tl.Tools)
		}
		if _, openai := first["function"]; openai != (f == client.ToolFormatOpenAI) {
			t.Fatalf("ListTools %s: %v", f, first)
		}
	}
	r := must(c.CallTool(ctx, u, s, "set_context", client.ToolCallRequest{Arguments: `{"label":"memory","content":"likes coffee"}`, ToolCallID: "call_1"})).ok(t)
	if r.IsError || !strings.Contains(r.Result, `"memory"`) {
		t.Fatalf("CallTool: %+v", r)
	}
	if r := must(c.CallTool(ctx, u, s, "set_context", client.ToolCallRequest{Arguments: map[string]any{"label": "soul", "content": "x"}})).ok(t); !r.IsError {
		t.Fatalf("CallTool on a read-only block: %+v", r)
	}
	mustNil(t, c.DeleteSessionBlock(ctx, u, s, "task"))
	wantErr(t, c.DeleteSessionBlock(ctx, u, s, "task"), 404, "not_found")
	mustNil(t, c.DeleteUserBlock(ctx, u, "soul"))
	mustNil(t, c.DeleteUserBlock(ctx, u, "memory"))
	_, err := c.GetUserBlock(ctx, u, "memory")
	wantErr(t, err, 404, "not_found")
	mustNil(t, c.DeleteSession(ctx, u, s))
}
