package blocks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Each session is a Model Context Protocol server (docs/mcp.md), over
// Streamable HTTP at POST /v1/users/{u}/sessions/{s}/mcp, built on the
// official Go SDK in its stateless mode: every POST is a whole exchange
// (the SDK makes a session for it and closes it with the answer), so any
// pod answers any request and nothing of MCP is kept anywhere. The server
// of a request is made for it (the session's ids in its handlers):
//
//   - tools/list answers offers (GET .../tools's definitions: one list,
//     each inputSchema the same JSON Schema), tools/call runs a call as
//     POST .../tools/{name} does (run): one text part, isError = is_error;
//     an unknown tool is the SDK's MCP error;
//   - the system prompt is the prompt system_prompt (argument frozen) and
//     the resource <base>/system-prompt; each block is a resource
//     <base>/blocks/<label>, its JSON as GET .../blocks/{label} answers.
//
// Answers are application/json. What is not MCP stays the API's: bad ids,
// a non-JSON Content-Type, a body over the limit (the envelope, before any
// exchange), and an error of the sidecar itself in a handler (Redis down,
// the deadline): the whole answer is then that error, 503 with the
// envelope, as on every route. A body that is no JSON-RPC message, and
// every refusal of the SDK's transport, is a JSON-RPC error (400, never a
// 5xx).

// mcpResourceScheme is the scheme of the resources' URIs:
// agentsidecar://users/<u>/sessions/<s>/system-prompt.
const mcpResourceScheme = "agentsidecar"

// mcpInstructions is the server's instructions in its initialize answer.
const mcpInstructions = "The memory of one conversation: context blocks that make up the system prompt " +
	"(the prompt system_prompt, or the resource system-prompt), tools to update them (set_context) and search them (search_context), " +
	"and a search of the user's past conversations (session_search)."

// mcpExchange is one POST to the MCP route: the request whose context (its
// deadline, its share of the in-flight budget) every handler uses, and the
// first error of the sidecar a handler met.
type mcpExchange struct {
	m             *Module
	r             *http.Request
	user, session string

	mu  sync.Mutex
	err error
}

// fail records err, the sidecar's own (the whole answer becomes it), and
// returns it for the SDK (whose answer is then dropped).
func (x *mcpExchange) fail(err error) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err == nil {
		x.err = err
	}
	return err
}

func (x *mcpExchange) failed() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// uri is the URI of one of the session's resources.
func (x *mcpExchange) uri(name string) string {
	return mcpResourceScheme + "://users/" + x.user + "/sessions/" + x.session + "/" + name
}

func (m *Module) serveMCP(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	body, err := sidecar.ReadJSON(r)
	if err != nil {
		return err
	}
	if !json.Valid(body) {
		m.metrics.request("invalid", false)
		writeRPCError(w, http.StatusBadRequest, jsonrpc.ID{}, jsonrpc.CodeParseError, "parse error: the body is not one JSON value")
		return nil
	}
	// The handlers run on the SDK's goroutines: answer headers are this
	// goroutine's to write.
	x := &mcpExchange{m: m, r: r.WithContext(sidecar.WithoutAnswerHeaders(r.Context())), user: user, session: session}
	in := r.Clone(r.Context())
	in.Body, in.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	// Answers are always application/json: a client that accepts JSON
	// (or says nothing) is served, whatever else its Accept lists.
	in.Header.Set("Accept", "application/json, text/event-stream")
	in.Header.Set("Content-Type", "application/json")
	srv := x.server()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// the route's MaxBodyBytes bounded the body already
		MaxRequestBodyBytes: -1,
	})
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, in)
	if err := x.failed(); err != nil {
		return err
	}
	if rec.status >= 400 && !isJSON(rec.header.Get("Content-Type")) {
		// the SDK's transport refused the request in plain text
		m.metrics.request("invalid", false)
		code := int64(jsonrpc.CodeInvalidRequest)
		if bytes.Contains(rec.body.Bytes(), []byte("not handled")) {
			code = jsonrpc.CodeMethodNotFound
		}
		writeRPCError(w, rec.status, requestID(body), code, strings.TrimSpace(rec.body.String()))
		return nil
	}
	if rec.body.Len() == 0 { // 202: notifications only
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(rec.code())
		return nil
	}
	sidecar.WriteBody(w, rec.code(), bytes.TrimRight(rec.body.Bytes(), "\n"))
	return nil
}

// server is the MCP server of one exchange: the session's tools, prompt
// and resources, with handlers bound to x.
func (x *mcpExchange) server() *mcp.Server {
	version, _ := sidecar.BuildVersion()
	if version == "" {
		version = "devel"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "agentsidecar", Title: "agentsidecar session memory", Version: version}, &mcp.ServerOptions{
		Instructions: mcpInstructions,
		// stateless: no list-changed notifications, no logging
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Prompts: &mcp.PromptCapabilities{}, Resources: &mcp.ResourceCapabilities{}},
		// lists and reads are the user's, and change with every write
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { *c = mcp.Cacheable{CacheScope: "private"} },
	})
	for _, t := range tools {
		// tools/list answers the session's definitions (the middleware);
		// this schema only registers the name for tools/call
		s.AddTool(&mcp.Tool{Name: t.name, InputSchema: map[string]any{"type": "object"}}, x.callHandler(t))
	}
	s.AddPrompt(&mcp.Prompt{
		Name:        "system_prompt",
		Title:       "System prompt",
		Description: "The system prompt of this conversation, rendered from its context blocks (one message holding its text).",
		Arguments: []*mcp.PromptArgument{{Name: "frozen",
			Description: `"true": the prompt frozen at the first such request, the same bytes until refreshed (keeps a provider's prompt cache hitting); "false" (default): rendered now`}},
	}, x.getPrompt)
	s.AddResource(&mcp.Resource{URI: x.uri("system-prompt"), Name: "system-prompt", Title: "System prompt", MIMEType: "text/plain",
		Description: "The system prompt of this conversation, rendered from its context blocks now."}, x.readPrompt)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: x.uri("blocks/{label}"), Name: "block", Title: "Context block", MIMEType: "application/json",
		Description: "A context block of this conversation (its own, else the user's), as JSON: label, scope, description, content, max_tokens, writable, position, tokens."}, x.readBlock)
	s.AddReceivingMiddleware(x.middleware)
	return s
}

// middleware answers the lists that depend on the session's blocks and
// counts every request.
func (x *mcpExchange) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var res mcp.Result
		var err error
		switch method {
		case "tools/list":
			// the SDK's answer (its cache fields), with the session's tools
			if res, err = next(ctx, method, req); err == nil {
				res.(*mcp.ListToolsResult).Tools, err = x.listTools()
			}
		case "resources/list":
			if res, err = next(ctx, method, req); err == nil {
				err = x.listBlocks(res.(*mcp.ListResourcesResult))
			}
		case "tools/call":
			if c, ok := req.(*mcp.CallToolRequest); ok && c.Params != nil {
				if _, known := findTool(c.Params.Name); !known {
					x.m.metrics.call("other", "unknown_tool")
				}
			}
			res, err = next(ctx, method, req)
		default:
			res, err = next(ctx, method, req)
		}
		x.m.metrics.request(method, err == nil)
		return res, err
	}
}

// listTools is the session's tools as GET .../tools offers them.
func (x *mcpExchange) listTools() ([]*mcp.Tool, error) {
	offers, err := x.m.offers(x.r.Context(), x.user, x.session)
	if err != nil {
		return nil, x.fail(err)
	}
	out := make([]*mcp.Tool, 0, len(offers))
	closed := false
	for _, o := range offers {
		out = append(out, &mcp.Tool{Name: o.name, Description: o.description, InputSchema: o.params,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: o.readOnly, OpenWorldHint: &closed}})
	}
	return out, nil
}

// callHandler runs tools/call of t as POST .../tools/{name} runs it, with
// the arguments as the client sent them (none: {}).
func (x *mcpExchange) callHandler(t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw := bytes.TrimSpace(req.Params.Arguments)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			raw = []byte("{}")
		}
		res, err := x.m.run(x.r, t, toolCall{user: x.user, session: x.session}, raw)
		if errors.Is(err, errNotArguments) {
			res, err = failed("The arguments of %s are not a JSON object. Call %s again with a JSON object of its parameters.", t.name, t.name), nil
		}
		if err != nil {
			x.m.metrics.call(t.name, "failed")
			return nil, x.fail(err)
		}
		outcome := "ok"
		if res.IsError {
			outcome = "is_error"
		}
		x.m.metrics.call(t.name, outcome)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Result}}, IsError: res.IsError}, nil
	}
}

func (x *mcpExchange) getPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	var wantFrozen bool
	switch req.Params.Arguments["frozen"] {
	case "", "false":
	case "true":
		wantFrozen = true
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `argument "frozen" must be "true" or "false"`}
	}
	f, err := x.m.prompt(x.r, x.user, x.session, wantFrozen)
	if err != nil {
		return nil, x.fail(err)
	}
	return &mcp.GetPromptResult{
		Description: "The system prompt of this conversation (" + strconv.Itoa(f.tokens) + " tokens): give it to the model as its system prompt.",
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: f.prompt}}},
	}, nil
}

func (x *mcpExchange) readPrompt(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	f, err := x.m.prompt(x.r, x.user, x.session, false)
	if err != nil {
		return nil, x.fail(err)
	}
	c := &mcp.ResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: f.prompt}
	if f.prompt == "" {
		// The SDK drops an empty text (go-sdk#1149), which a strict client
		// refuses: an empty blob says the same.
		c.Blob = []byte{}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

func (x *mcpExchange) readBlock(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	label, ok := strings.CutPrefix(req.Params.URI, x.uri("blocks/"))
	if !ok || !sidecar.ValidID(label) {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	b, err := x.m.store.Get(x.r.Context(), x.user, x.session, strings.ToLower(label))
	if errors.Is(err, redisstore.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	if err != nil {
		return nil, x.fail(err)
	}
	text, err := json.Marshal(b)
	if err != nil {
		return nil, x.fail(err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(text)}}}, nil
}

// listBlocks adds the session's blocks to resources/list.
func (x *mcpExchange) listBlocks(res *mcp.ListResourcesResult) error {
	v, err := x.m.store.Read(x.r.Context(), x.user, x.session, false)
	if err != nil {
		return x.fail(err)
	}
	for _, b := range v.blocks {
		r := &mcp.Resource{URI: x.uri("blocks/" + b.Label), Name: b.Label, MIMEType: "application/json"}
		if b.Description != nil {
			r.Description = *b.Description
		}
		res.Resources = append(res.Resources, r)
	}
	return nil
}

// writeRPCError answers a JSON-RPC error response.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, code int64, message string) {
	body, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: message}})
	if err != nil { // only a programming error
		sidecar.WriteError(w, sidecar.Errorf(http.StatusInternalServerError, "internal", "internal error"))
		return
	}
	sidecar.WriteBody(w, status, body)
}

// requestID is the id of the one request body holds, if any (else the
// null id of an answer to an unreadable request).
func requestID(body []byte) jsonrpc.ID {
	var msg struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(msg.ID)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// recorder holds the SDK's answer (JSON, one exchange's) until it is
// known to be the answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

func (r *recorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
