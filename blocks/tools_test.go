package blocks_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

type toolResult struct {
	Result  string `json:"result"`
	IsError bool   `json:"is_error"`
}

func call(t *testing.T, h *sidecartest.Host, name, body string) toolResult {
	t.Helper()
	rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/tools/"+name, body)
	if rep.Status != 200 {
		t.Fatalf("call %s %s: %d %s", name, body, rep.Status, rep.Body)
	}
	var r toolResult
	rep.JSON(t, &r)
	return r
}

// TestToolDefinitions: the shapes of OpenAI's function tools and
// Anthropic's tools, set_context's label an enum of the writable blocks;
// session_search offered once the user has a session (the session block
// made one), before any search made the user's index.
func TestToolDefinitions(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		// No block: no tool.
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/s1/tools?format=openai", ""); rep.Status != 200 || strings.TrimSpace(rep.Body) != `{"tools":[]}` {
			t.Fatalf("no blocks: %d %s", rep.Status, rep.Body)
		}
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/soul", `{"content":"be kind","writable":false}`), 201)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/memory", `{"content":"","max_tokens":100}`), 201)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/task", `{"content":"fix it","position":-1}`), 201)

		var openai struct {
			Tools []struct {
				Type     string `json:"type"`
				Function struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		h.Do(t, "GET", "/v1/users/alice/sessions/s1/tools?format=openai", "").JSON(t, &openai)
		var anthropic struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"input_schema"`
			} `json:"tools"`
		}
		h.Do(t, "GET", "/v1/users/alice/sessions/s1/tools?format=anthropic", "").JSON(t, &anthropic)
		if len(openai.Tools) != 3 || len(anthropic.Tools) != 3 {
			t.Fatalf("tools: openai %d, anthropic %d, want 3 each", len(openai.Tools), len(anthropic.Tools))
		}
		for i, name := range []string{"set_context", "search_context", "session_search"} {
			o, a := openai.Tools[i], anthropic.Tools[i]
			if o.Type != "function" || o.Function.Name != name || a.Name != name || o.Function.Description == "" || o.Function.Description != a.Description {
				t.Errorf("tool %d: openai %+v, anthropic %+v", i, o, a)
			}
			if string(o.Function.Parameters) != string(a.InputSchema) {
				t.Errorf("%s: parameters differ: %s vs %s", name, o.Function.Parameters, a.InputSchema)
			}
			var schema struct {
				Type       string
				Properties map[string]struct {
					Type string
					Enum []string
				}
				Required             []string
				AdditionalProperties *bool `json:"additionalProperties"`
			}
			if err := json.Unmarshal(a.InputSchema, &schema); err != nil || schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
				t.Errorf("%s: schema %s (%v)", name, a.InputSchema, err)
			}
			for _, r := range schema.Required {
				if _, ok := schema.Properties[r]; !ok {
					t.Errorf("%s: required %q is no property", name, r)
				}
			}
			if name == "set_context" {
				if got := schema.Properties["label"].Enum; !slices.Equal(got, []string{"task", "memory"}) {
					t.Errorf("set_context labels %v, want the writable blocks [task memory]", got)
				}
				if got := schema.Properties["action"].Enum; !slices.Equal(got, []string{"replace", "append"}) {
					t.Errorf("set_context actions %v", got)
				}
			}
		}
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/s1/tools?format=gemini", ""); rep.Status != 400 || rep.Code() != "invalid_query" {
			t.Errorf("format=gemini: %d %s", rep.Status, rep.Body)
		}
	})
}

func TestSetContext(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/soul", `{"content":"be kind","writable":false}`), 201)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/memory", `{"content":"likes tea","max_tokens":10}`), 201)

		// Replace (the default), with the arguments as the JSON string a model produced.
		r := call(t, h, "set_context", `{"arguments":"{\"label\":\"memory\",\"content\":\"likes coffee\"}","tool_call_id":"call_1"}`)
		if r.IsError || r.Result != `Replaced the content of block "memory" (user block); it now holds 3/10 tokens.` {
			t.Fatalf("replace: %+v", r)
		}
		// Append, the arguments as an object.
		r = call(t, h, "set_context", `{"arguments":{"label":"Memory","content":" a lot","action":"append"},"tool_call_id":"call_2"}`)
		if r.IsError || !strings.HasPrefix(r.Result, `Appended to block "memory"`) {
			t.Fatalf("append: %+v", r)
		}
		if got := wantBlock(t, h.Do(t, "GET", "/v1/users/alice/blocks/memory", ""), 200); got.Content != "likes coffee a lot" {
			t.Fatalf("after the tool calls: %+v", got)
		}
		// A repeated tool_call_id answers the first result and writes nothing.
		again := call(t, h, "set_context", `{"arguments":{"label":"memory","content":" a lot","action":"append"},"tool_call_id":"call_2"}`)
		if again.IsError || again.Result != r.Result {
			t.Errorf("repeat: %+v, want %+v", again, r)
		}
		if got := wantBlock(t, h.Do(t, "GET", "/v1/users/alice/blocks/memory", ""), 200); got.Content != "likes coffee a lot" {
			t.Errorf("after the repeat: %q", got.Content)
		}
		if v := hget(t, srv, l.SessionKey(blocks.ToolCallsFamily, "alice", "s1"), "call_2"); v == "" || ttlOf(t, srv, l.SessionKey(blocks.ToolCallsFamily, "alice", "s1")) <= 0 {
			t.Errorf("tool call memory %q", v)
		}

		// The model's mistakes: 200 with is_error and a text it can act on, nothing written.
		before := hget(t, srv, l.UserKey(blocks.UserBlocksFamily, "alice"), "memory")
		for _, c := range []struct{ body, says string }{
			{`{"arguments":{"label":"soul","content":"be rude"}}`, `Block "soul" is read-only; nothing was written. Writable blocks: memory.`},
			{`{"arguments":{"label":"memory","content":"one two three four five six seven eight nine"}}`, `Block "memory" is full: the new content would take 12 tokens and the block holds at most 10.`},
			{`{"arguments":{"label":"diary","content":"x"}}`, `There is no block "diary"; nothing was written. Writable blocks: memory.`},
			{`{"arguments":{"label":"a:b","content":"x"}}`, `There is no block "a:b"`},
			{`{"arguments":{"label":"memory"}}`, `set_context needs "label"`},
			{`{"arguments":{"label":"memory","content":"x","action":"prepend"}}`, `"action" must be "replace" or "append"`},
			{`{"arguments":{"label":"memory","content":5}}`, `Invalid arguments for set_context: field "content"`},
			{`{"arguments":{"label":"memory","content":"x","mood":"happy"}}`, `Invalid arguments for set_context: unknown field "mood"`},
			{`{"arguments":"{\"label\": \"memory\", \"content\": "}`, `The arguments of set_context are not a JSON object`},
			{`{"arguments":"[1]"}`, `The arguments of set_context are not a JSON object`},
		} {
			r := call(t, h, "set_context", c.body)
			if !r.IsError || !strings.Contains(r.Result, c.says) {
				t.Errorf("%s: %+v, want is_error saying %q", c.body, r, c.says)
			}
		}
		if after := hget(t, srv, l.UserKey(blocks.UserBlocksFamily, "alice"), "memory"); after != before {
			t.Errorf("the refused calls wrote: %s -> %s", before, after)
		}
		// A malformed envelope is the caller's mistake: 400; an unknown tool 404.
		for _, c := range []struct {
			name, body string
			status     int
			code       string
		}{
			{"set_context", `{}`, 400, "invalid_field"},
			{"set_context", `{"arguments":null}`, 400, "invalid_field"},
			{"set_context", `{"arguments":5}`, 400, "invalid_field"},
			{"set_context", `{"arguments":{},"tool_call_id":"has space"}`, 400, "invalid_field"},
			{"set_context", `not json`, 400, "invalid_json"},
			{"set_context", `{"arguments":{},"extra":1}`, 400, "unknown_field"},
			{"load_context", `{"arguments":{}}`, 404, "not_found"},
		} {
			rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/tools/"+c.name, c.body)
			if rep.Status != c.status || rep.Code() != c.code {
				t.Errorf("%s %s: %d %s, want %d %s", c.name, c.body, rep.Status, rep.Body, c.status, c.code)
			}
		}
		// A session block of the label takes the write.
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/memory", `{"content":""}`), 201)
		if r := call(t, h, "set_context", `{"arguments":{"label":"memory","content":"here"}}`); r.IsError || !strings.Contains(r.Result, "(session block)") {
			t.Errorf("session block: %+v", r)
		}
	})
}

func TestSearchContext(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/memory", `{"content":"Likes green tea\nlives in Lyon\nTea at five"}`), 201)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/task", `{"content":"buy TEA"}`), 201)
		for _, c := range []struct{ args, want string }{
			{`{"query":"tea"}`, "[memory] Likes green tea\n[memory] Tea at five\n[task] buy TEA"},
			{`{"query":"TEA five"}`, "[memory] Tea at five"},
			{`{"query":"tea","label":"task"}`, "[task] buy TEA"},
			{`{"query":"coffee"}`, `No line of the context blocks contains every word of "coffee".`},
		} {
			if r := call(t, h, "search_context", `{"arguments":`+c.args+`}`); r.IsError || r.Result != c.want {
				t.Errorf("%s: %+v, want %q", c.args, r, c.want)
			}
		}
		if r := call(t, h, "search_context", `{"arguments":{}}`); !r.IsError {
			t.Errorf("no query: %+v", r)
		}
	})
}

// The memory of tool call ids keeps the 1 000 newest: the hash stays
// bounded and the oldest id is forgotten.
func TestToolCallIDsBounded(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/n", `{"content":""}`), 201)
	for i := range 1005 {
		call(t, h, "set_context", fmt.Sprintf(`{"arguments":{"label":"n","content":"%d"},"tool_call_id":"id-%d"}`, i, i))
	}
	c := srv.Client(t)
	k := srv.Layout().SessionKey(blocks.ToolCallsFamily, "alice", "s1")
	n, _ := c.Do(t.Context(), c.B().Hlen().Key(k).Build()).AsInt64()
	if n != 2*1000+1 {
		t.Errorf("tool call hash: %d fields, want 2001 (1000 ids, 1000 ring slots, the count)", n)
	}
	// id-0 is forgotten: a repeat writes again; id-1004 is remembered.
	call(t, h, "set_context", `{"arguments":{"label":"n","content":"again"},"tool_call_id":"id-0"}`)
	if got := wantBlock(t, h.Do(t, "GET", "/v1/users/alice/sessions/s1/blocks/n", ""), 200); got.Content != "again" {
		t.Errorf("after a forgotten id: %q", got.Content)
	}
	call(t, h, "set_context", `{"arguments":{"label":"n","content":"not again"},"tool_call_id":"id-1004"}`)
	if got := wantBlock(t, h.Do(t, "GET", "/v1/users/alice/sessions/s1/blocks/n", ""), 200); got.Content != "again" {
		t.Errorf("after a remembered id: %q", got.Content)
	}
}
