package blocks_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
)

const mcpPath = "/v1/users/alice/sessions/s1/mcp"

// connect opens an MCP client session (the official Go SDK's client, over
// Streamable HTTP) to the session's server at base+path; hc sends its
// requests (nil: the default client).
func connect(t *testing.T, base, path string, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "blocks-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + path, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", path, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// text is the one text part of a tool's result.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result of %d parts, want one: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result part %T, want text", res.Content[0])
	}
	return tc.Text
}

// TestMCPTools: through the Go SDK's client, tools/list is GET .../tools
// (names, descriptions and each inputSchema the same JSON Schema, as
// Anthropic's input_schema), set_context offering only the writable
// blocks; tools/call runs the call as POST .../tools/{name}: the same
// text, isError = is_error and nothing written for a read-only or full
// block or a bad argument; an unknown tool is an MCP error; session_search,
// listed before any index exists, builds it at its first call; the calls
// are counted by tool and outcome.
func TestMCPTools(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory, messages.Factory, blocks.Factory)
		cs := connect(t, h.API, mcpPath, nil)
		init := cs.InitializeResult()
		if init.ServerInfo.Name != "agentsidecar" || init.Capabilities.Tools == nil || init.Capabilities.Prompts == nil || init.Capabilities.Resources == nil {
			t.Fatalf("initialize: %+v %+v", init.ServerInfo, init.Capabilities)
		}
		list, err := cs.ListTools(t.Context(), nil)
		if err != nil || len(list.Tools) != 0 {
			t.Fatalf("no blocks, no sessions: tools %+v (%v), want none", list, err)
		}
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/soul", `{"content":"be kind","writable":false}`), 201)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/memory", `{"content":"likes tea","max_tokens":10}`), 201)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/task", `{"content":"fix the sink","position":-1}`), 201)

		var rest struct {
			Tools []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema any    `json:"input_schema"`
			} `json:"tools"`
		}
		h.Do(t, "GET", "/v1/users/alice/sessions/s1/tools?format=anthropic", "").JSON(t, &rest)
		if list, err = cs.ListTools(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if len(list.Tools) != len(rest.Tools) || len(list.Tools) != 3 {
			t.Fatalf("tools/list %d tools, GET .../tools %d, want 3 each", len(list.Tools), len(rest.Tools))
		}
		for i, tl := range list.Tools {
			r := rest.Tools[i]
			raw, _ := json.Marshal(tl.InputSchema)
			var schema any
			_ = json.Unmarshal(raw, &schema)
			if tl.Name != r.Name || tl.Description != r.Description || !reflect.DeepEqual(schema, r.InputSchema) {
				t.Errorf("tool %d: MCP %s %s, REST %s %v", i, tl.Name, raw, r.Name, r.InputSchema)
			}
			if ro := tl.Annotations != nil && tl.Annotations.ReadOnlyHint; ro != (tl.Name != "set_context") {
				t.Errorf("%s: readOnlyHint %v", tl.Name, ro)
			}
		}
		var setSchema struct {
			Properties struct{ Label struct{ Enum []string } }
		}
		raw, _ := json.Marshal(list.Tools[0].InputSchema)
		if err := json.Unmarshal(raw, &setSchema); err != nil || !slices.Equal(setSchema.Properties.Label.Enum, []string{"task", "memory"}) {
			t.Errorf("set_context labels %v, want the writable blocks [task memory] (%s)", setSchema.Properties.Label.Enum, raw)
		}

		callMCP := func(name string, args any) *mcp.CallToolResult {
			t.Helper()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatalf("call %s %v: %v", name, args, err)
			}
			return res
		}
		memory := func() string {
			t.Helper()
			var b block
			h.Do(t, "GET", "/v1/users/alice/blocks/memory", "").JSON(t, &b)
			return b.Content
		}
		res := callMCP("set_context", map[string]any{"label": "memory", "content": " and cake", "action": "append"})
		if got := text(t, res); res.IsError || got != `Appended to block "memory" (user block); it now holds 6/10 tokens.` {
			t.Fatalf("append: %q (isError %v)", got, res.IsError)
		}
		if got := memory(); got != "likes tea and cake" {
			t.Fatalf("memory after the MCP append: %q", got)
		}
		for _, c := range []struct {
			args map[string]any
			says string
		}{
			{map[string]any{"label": "soul", "content": "be mean"}, "read-only"},
			{map[string]any{"label": "memory", "content": strings.Repeat("tea ", 40)}, "is full"},
			{map[string]any{"label": "memory"}, `needs "label"`},
			{map[string]any{"label": "memory", "content": "x", "action": "merge"}, `"action" must be`},
			{map[string]any{"label": "memory", "content": "x", "extra": 1}, "Invalid arguments"},
			{map[string]any{"label": "nope", "content": "x"}, "no block"},
		} {
			res := callMCP("set_context", c.args)
			if got := text(t, res); !res.IsError || !strings.Contains(got, c.says) || !strings.Contains(got, "othing was") {
				t.Errorf("set_context %v: %q (isError %v), want an error result saying %q", c.args, got, res.IsError, c.says)
			}
		}
		if got := memory(); got != "likes tea and cake" {
			t.Fatalf("memory after refused calls: %q", got)
		}
		// no arguments at all: the model's mistake, not the client's
		if res := callMCP("set_context", nil); !res.IsError {
			t.Errorf("set_context without arguments: %q, want an error result", text(t, res))
		}
		if res := callMCP("search_context", map[string]any{"query": "CAKE"}); res.IsError || text(t, res) != "[memory] likes tea and cake" {
			t.Errorf("search_context: %q", text(t, res))
		}
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "load_context", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("unknown tool: %v, want an MCP error", err)
		}
		// session_search was listed before any index existed; its first
		// call builds the user's index, as a first REST search does
		if r := h.Do(t, "POST", "/v1/users/alice/sessions/s2/messages", `{"id":"m1","role":"user","content":"The deployment failed"}`); r.Status != 201 {
			t.Fatalf("append: %s", r)
		}
		if keys := srv.Keys(t, "agent_search_*"); len(keys) != 0 {
			t.Fatalf("search keys before any search: %v", keys)
		}
		if res := callMCP("session_search", map[string]any{"query": "deploy"}); res.IsError || !strings.Contains(text(t, res), "session s2, message m1") {
			t.Errorf("session_search: %q (isError %v), want s2's m1", text(t, res), res.IsError)
		}
		if keys := srv.Keys(t, "agent_search_*"); len(keys) == 0 {
			t.Error("session_search through MCP built no index")
		}
		page := h.Metrics(t)
		for _, want := range []string{
			`sidecar_mcp_tool_calls_total{outcome="ok",tool="set_context"} 1`,
			`sidecar_mcp_tool_calls_total{outcome="is_error",tool="set_context"} 7`,
			`sidecar_mcp_tool_calls_total{outcome="ok",tool="search_context"} 1`,
			`sidecar_mcp_tool_calls_total{outcome="ok",tool="session_search"} 1`,
			`sidecar_mcp_tool_calls_total{outcome="unknown_tool",tool="other"} 1`,
			`sidecar_mcp_tool_calls_total{outcome="failed",tool="session_search"} 0`,
			`sidecar_mcp_requests_total{method="tools/list",outcome="ok"} 2`,
			`sidecar_mcp_requests_total{method="tools/call",outcome="error"} 1`,
			`sidecar_mcp_requests_total{method="other",outcome="ok"} 0`,
		} {
			if !strings.Contains(page, want+"\n") {
				t.Errorf("/metrics has no %s:\n%s", want, grep(page, "sidecar_mcp_"))
			}
		}
	})
}

// TestMCPPromptAndResources: the system prompt as the prompt
// system_prompt (live and frozen, as GET .../system-prompt answers them)
// and as a resource; each block a resource holding its JSON as GET
// .../blocks/{label} answers it; an empty prompt is an empty resource.
func TestMCPPromptAndResources(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/blocks/persona", `{"content":"You are terse.","description":"who you are","writable":false}`), 201)
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/task", `{"content":"fix the sink","max_tokens":50}`), 201)
		cs := connect(t, h.API, mcpPath, nil)

		prompts, err := cs.ListPrompts(t.Context(), nil)
		if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "system_prompt" {
			t.Fatalf("prompts/list: %+v %v", prompts, err)
		}
		live := h.Do(t, "GET", "/v1/users/alice/sessions/s1/system-prompt", "").Body
		if !strings.Contains(live, "PERSONA (who you are) [readonly]") {
			t.Fatalf("system prompt: %q", live)
		}
		promptText := func(args map[string]string) string {
			t.Helper()
			p, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "system_prompt", Arguments: args})
			if err != nil {
				t.Fatalf("prompts/get %v: %v", args, err)
			}
			if len(p.Messages) != 1 {
				t.Fatalf("prompts/get: %d messages", len(p.Messages))
			}
			return p.Messages[0].Content.(*mcp.TextContent).Text
		}
		if got := promptText(nil); got != live {
			t.Errorf("prompts/get: %q, want GET .../system-prompt's %q", got, live)
		}
		frozen := promptText(map[string]string{"frozen": "true"})
		wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/task", `{"content":"fix the tap","max_tokens":50}`), 200)
		if got := promptText(map[string]string{"frozen": "true"}); got != frozen || !strings.Contains(got, "fix the sink") {
			t.Errorf("frozen prompt after a change: %q, want the first %q", got, frozen)
		}
		if got := h.Do(t, "GET", "/v1/users/alice/sessions/s1/system-prompt?frozen=true", "").Body; got != frozen {
			t.Errorf("GET ?frozen=true: %q, want the prompt frozen through MCP", got)
		}
		if got := promptText(map[string]string{"frozen": "false"}); !strings.Contains(got, "fix the tap") {
			t.Errorf("live prompt: %q", got)
		}
		if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "system_prompt", Arguments: map[string]string{"frozen": "yes"}}); err == nil {
			t.Error("frozen=yes: no error")
		}

		resources, err := cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for _, r := range resources.Resources {
			uris = append(uris, r.URI)
		}
		const base = "agentsidecar://users/alice/sessions/s1/"
		if want := []string{base + "system-prompt", base + "blocks/persona", base + "blocks/task"}; !slices.Equal(uris, want) {
			t.Fatalf("resources/list: %v, want %v", uris, want)
		}
		read := func(uri string) *mcp.ResourceContents {
			t.Helper()
			r, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
			if err != nil || len(r.Contents) != 1 {
				t.Fatalf("resources/read %s: %+v %v", uri, r, err)
			}
			return r.Contents[0]
		}
		if c := read(base + "system-prompt"); c.Text != h.Do(t, "GET", "/v1/users/alice/sessions/s1/system-prompt", "").Body || c.MIMEType != "text/plain" {
			t.Errorf("system-prompt resource: %+v", c)
		}
		var got, want any
		c := read(base + "blocks/persona")
		_ = json.Unmarshal([]byte(c.Text), &got)
		h.Do(t, "GET", "/v1/users/alice/sessions/s1/blocks/persona", "").JSON(t, &want)
		if c.MIMEType != "application/json" || !reflect.DeepEqual(got, want) {
			t.Errorf("block resource: %s, want %v", c.Text, want)
		}
		for _, uri := range []string{base + "blocks/nope", "agentsidecar://users/alice/sessions/s2/blocks/task", base + "blocks/a:b", base + "nope"} {
			if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri}); err == nil {
				t.Errorf("%s: no error", uri)
			}
		}
		// bob (an id with @) has no block: an empty prompt
		empty := connect(t, h.API, "/v1/users/bob@example.com/sessions/s1/mcp", nil)
		r, err := empty.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "agentsidecar://users/bob@example.com/sessions/s1/system-prompt"})
		if err != nil || len(r.Contents) != 1 || r.Contents[0].Text != "" || r.Contents[0].Blob == nil || len(r.Contents[0].Blob) != 0 {
			t.Errorf("empty prompt: %+v %v", r, err)
		}
		if n := srv.Keys(t, "*bob*"); len(n) != 0 {
			t.Errorf("reads through MCP wrote %v", n)
		}
	})
}

// TestMCPRefusals: what is not MCP is the API's (bad ids, Content-Type,
// method, the body limit: the envelope before any exchange; a Redis
// outage: 503); a body that is no JSON-RPC request is a JSON-RPC error,
// never a 5xx.
func TestMCPRefusals(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	mcpHeaders := []string{"Accept", "application/json, text/event-stream"}
	for _, c := range []struct {
		method, path, body string
		header             []string
		status             int
		code               string // the envelope's
		rpc                int64  // the JSON-RPC error's
		id                 any
	}{
		{"POST", "/v1/users/a:b/sessions/s1/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, 400, "invalid_id", 0, nil},
		{"POST", "/v1/users/alice/sessions/" + strings.Repeat("s", 129) + "/mcp", `{}`, nil, 400, "invalid_id", 0, nil},
		{"POST", mcpPath, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", 0, nil},
		{"GET", mcpPath, "", nil, 405, "method_not_allowed", 0, nil},
		{"DELETE", mcpPath, "", nil, 405, "method_not_allowed", 0, nil},
		{"POST", mcpPath, `{"jsonrpc":"2.0","id":1,`, nil, 400, "", -32700, nil},
		{"POST", mcpPath, ``, nil, 400, "", -32700, nil},
		{"POST", mcpPath, `{"hello":"world"}`, nil, 400, "", -32600, nil},
		{"POST", mcpPath, `[]`, nil, 400, "", -32600, nil},
		{"POST", mcpPath, `"tools/list"`, nil, 400, "", -32600, nil},
		{"POST", mcpPath, `{"jsonrpc":"2.0","id":7,"method":"nope/nope"}`, nil, 400, "", -32601, float64(7)},
		{"POST", mcpPath, `{"jsonrpc":"2.0","id":"x","method":"tools/call"}`, nil, 400, "", -32600, "x"},
		{"POST", mcpPath, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"set_context","arguments":"{"}}`, mcpHeaders, 200, "", 0, nil},
	} {
		r := h.Do(t, c.method, c.path, c.body, c.header...)
		var rpc struct {
			JSONRPC string `json:"jsonrpc"`
			ID      any    `json:"id"`
			Error   struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(r.Body), &rpc)
		switch {
		case r.Status != c.status:
			t.Errorf("%s %s %q: %s, want %d", c.method, c.path, c.body, r, c.status)
		case c.code != "" && r.Code() != c.code:
			t.Errorf("%s %s %q: %s, want the envelope %s", c.method, c.path, c.body, r, c.code)
		case c.rpc != 0 && (rpc.JSONRPC != "2.0" || rpc.Error.Code != c.rpc || rpc.Error.Message == "" || !reflect.DeepEqual(rpc.ID, c.id)):
			t.Errorf("%s %q: %s, want JSON-RPC error %d with id %v", c.method, c.body, r, c.rpc, c.id)
		case r.Header.Get("Content-Type") != "application/json":
			t.Errorf("%s %q: Content-Type %q", c.method, c.body, r.Header.Get("Content-Type"))
		}
	}
	// a notification: accepted, no answer
	if r := h.Do(t, "POST", mcpPath, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.Status != 202 || r.Body != "" {
		t.Errorf("notification: %s, want 202 without a body", r)
	}
	// arguments the model sent as a JSON string that is not an object: the model's mistake
	r := h.Do(t, "POST", mcpPath, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"set_context","arguments":"{"}}`)
	var res struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		}
	}
	r.JSON(t, &res)
	if !res.Result.IsError || len(res.Result.Content) != 1 || !strings.Contains(res.Result.Content[0].Text, "not a JSON object") {
		t.Errorf("arguments \"{\": %s", r)
	}
	// the route's body limit, as on every route
	small := start(t, srv, envconf.Env{"SIDECAR_MAX_BODY_BYTES": "1024"})
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"set_context","arguments":{"label":"m","content":"` + strings.Repeat("x", 2048) + `"}}}`
	if r := small.Do(t, "POST", mcpPath, big); r.Status != 413 || r.Code() != "body_too_large" {
		t.Errorf("a body over SIDECAR_MAX_BODY_BYTES: %s, want 413 body_too_large", r)
	}
	if n := srv.DBSize(t); n != 0 {
		t.Errorf("refused requests wrote %v", srv.Keys(t, "*"))
	}
	srv.Kill()
	r = h.Do(t, "POST", mcpPath, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if r.Status != 503 || r.Code() != "redis_unavailable" || r.Header.Get("Retry-After") == "" {
		t.Errorf("tools/list with Redis down: %s, want 503 redis_unavailable", r)
	}
	if r := h.Do(t, "POST", mcpPath, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); r.Status != 200 || !strings.Contains(r.Body, `"result":{}`) {
		t.Errorf("ping with Redis down: %s, want its answer (it reads nothing)", r)
	}
}

// TestMCPDeadline: an MCP exchange takes the API's deadline
// (SIDECAR_REQUEST_TIMEOUT): with redis-server asleep far longer, tools/list
// and tools/call answer 503 with the envelope, not the SDK's answer after
// the sleep; once Redis is awake the same requests are answered.
func TestMCPDeadline(t *testing.T) {
	srv := redisstoretest.NewReal(t, "--enable-debug-command", "yes")
	h := start(t, srv, envconf.Env{"SIDECAR_REQUEST_TIMEOUT": "2s"})
	wantBlock(t, h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/task", `{"content":"fix the sink"}`), 201)
	asleep := make(chan error, 1)
	go func() {
		_, err := redisstoretest.RawCommand(srv.Addr, "DEBUG SLEEP 8", time.Minute)
		asleep <- err
	}()
	// asleep once a PING of its own goes unanswered
	for {
		if _, err := redisstoretest.RawCommand(srv.Addr, "PING", 100*time.Millisecond); err != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_context","arguments":{"query":"sink"}}}`,
	} {
		if r := h.Do(t, "POST", mcpPath, body); r.Status != 503 || (r.Code() != "timeout" && r.Code() != "redis_unavailable") {
			t.Errorf("%s with Redis asleep: %s, want 503 at the deadline", body, r)
		}
	}
	if err := <-asleep; err != nil {
		t.Fatalf("DEBUG SLEEP: %v", err)
	}
	for {
		r := h.Do(t, "POST", mcpPath, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_context","arguments":{"query":"sink"}}}`)
		if r.Status == 503 { // the health check has not seen Redis wake yet
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if r.Status != 200 || !strings.Contains(r.Body, `[task] fix the sink`) {
			t.Fatalf("tools/call once Redis is awake: %s", r)
		}
		break
	}
}

// TestMCPTwoPods: one MCP client whose requests go to two sidecars on one
// Redis in turn (stateless: nothing of the exchange lives in a pod):
// initialize on one, a write on the other, read back through the first.
func TestMCPTwoPods(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		pods := []*sidecartest.Host{start(t, srv, nil), start(t, srv, nil)}
		var n atomic.Int64
		hc := &http.Client{Transport: roundTripper(func(req *http.Request) (*http.Response, error) {
			pod := pods[n.Add(1)%2]
			req = req.Clone(req.Context())
			req.URL.Host = strings.TrimPrefix(pod.API, "http://")
			req.Host = req.URL.Host
			return http.DefaultTransport.RoundTrip(req)
		})}
		wantBlock(t, pods[0].Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/notes", `{"content":""}`), 201)
		cs := connect(t, pods[0].API, mcpPath, hc)
		for i := range 4 {
			content := "note " + string(rune('a'+i))
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "set_context", Arguments: map[string]any{"label": "notes", "content": content}})
			if err != nil || res.IsError {
				t.Fatalf("set_context %d: %+v %v", i, res, err)
			}
			got, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_context", Arguments: map[string]any{"query": content}})
			if err != nil || got.IsError || text(t, got) != "[notes] "+content {
				t.Fatalf("search_context %d on the other pod: %+v %v", i, got, err)
			}
		}
		for i, p := range pods {
			if page := p.Metrics(t); !strings.Contains(page, `sidecar_mcp_requests_total{method="tools/call",outcome="ok"} 4`+"\n") {
				t.Errorf("pod %d did not answer 4 of the 8 calls", i)
			}
		}
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// grep is the lines of page that hold s.
func grep(page, s string) string {
	var out []string
	for line := range strings.Lines(page) {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
