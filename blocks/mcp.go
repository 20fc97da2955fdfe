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
// pod answers any request and nothing of MCP is kept anywhere. The module
// has one SDK server; the exchange (the session's ids, the request) rides
// in the request's context to its handlers:
//
//   - tools/list answers offers (GET .../tools's definitions: one list,
//     each inputSchema the same JSON Schema), tools/call runs a call as
//     POST .../tools/{name} does (run): one text part, isError = is_error;
//     an unknown tool is the SDK's MCP error;
//   - the system prompt is the prompt system_prompt (argument frozen) and
//     the resource <base>/system-prompt; each block is a resource
//     <base>/blocks/<label>, its JSON as GET .../blocks/{label} answers
//     (one resource template, read by readResource; every answer the SDK
//     makes, so it carries the fields each protocol version requires).
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
// deadline, its share of the in-flight budget) every handler uses (the
// SDK's handler context drops the deadline), and the first error of the
// sidecar a handler met.
type mcpExchange struct {
	r             *http.Request
	user, session string

	mu  sync.Mutex
	err error
}

type exchangeKey struct{}

// exchange is the exchange a handler serves: it rides in the context of
// the request the SDK is given, whose values its handlers' contexts keep.
func exchange(ctx context.Context) (*mcpExchange, error) {
	x, ok := ctx.Value(exchangeKey{}).(*mcpExchange)
	if !ok {
		return nil, errors.New("mcp: a handler without its exchange")
	}
	return x, nil
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
	x := &mcpExchange{r: r.WithContext(sidecar.WithoutAnswerHeaders(r.Context())), user: user, session: session}
	in := r.Clone(context.WithValue(r.Context(), exchangeKey{}, x))
	in.Body, in.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	// Answers are always application/json: a client that accepts JSON
	// (or says nothing) is served, whatever else its Accept lists.
	in.Header.Set("Accept", "application/json, text/event-stream")
	in.Header.Set("Content-Type", "application/json")
	rec := &recorder{header: http.Header{}}
	m.mcp.ServeHTTP(rec, in)
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

// newMCP is the module's MCP handler: one SDK server (stateless, JSON
// answers) whose handlers serve the exchange in their context.
func (m *Module) newMCP() *mcp.StreamableHTTPHandler {
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
		s.AddTool(&mcp.Tool{Name: t.name, InputSchema: map[string]any{"type": "object"}}, m.callHandler(t))
	}
	s.AddPrompt(&mcp.Prompt{
		Name:        "system_prompt",
		Title:       "System prompt",
		Description: "The system prompt of this conversation, rendered from its context blocks (one message holding its text).",
		Arguments: []*mcp.PromptArgument{{Name: "frozen",
			Description: `"true": the prompt frozen at the first such request, the same bytes until refreshed (keeps a provider's prompt cache hitting); "false" (default): rendered now`}},
	}, m.getPrompt)
	// one template for every resource of a session (its ids may hold '@',
	// which only a reserved expansion matches); resources/list names them
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: mcpResourceScheme + "://users/{+user_id}/sessions/{+session_id}/{+name}",
		Name: "session", Title: "Session memory",
		Description: "A resource of the conversation: system-prompt (the rendered system prompt, text/plain) or blocks/<label> (a context block as JSON)."},
		m.readResource)
	s.AddReceivingMiddleware(m.mcpMiddleware)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// the route's MaxBodyBytes bounded the body already
		MaxRequestBodyBytes: -1,
	})
}

// mcpMiddleware completes the SDK's lists with what depends on the
// session's blocks and counts every request.
func (m *Module) mcpMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := m.mcpMethod(ctx, next, method, req)
		m.metrics.request(method, err == nil)
		return res, err
	}
}

func (m *Module) mcpMethod(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	switch method {
	case "tools/list", "resources/list":
	case "tools/call":
		if c, ok := req.(*mcp.CallToolRequest); ok && c.Params != nil {
			if _, known := findTool(c.Params.Name); !known {
				m.metrics.call("other", "unknown_tool")
			}
		}
		return next(ctx, method, req)
	default:
		return next(ctx, method, req)
	}
	x, err := exchange(ctx)
	if err != nil {
		return nil, err
	}
	// the SDK's answer (its cache and protocol fields), completed
	res, err := next(ctx, method, req)
	if err != nil {
		return nil, err
	}
	if method == "tools/list" {
		res.(*mcp.ListToolsResult).Tools, err = m.mcpTools(x)
		return res, err
	}
	return res, m.listResources(x, res.(*mcp.ListResourcesResult))
}

// mcpTools is the session's tools as GET .../tools offers them.
func (m *Module) mcpTools(x *mcpExchange) ([]*mcp.Tool, error) {
	offers, err := m.offers(x.r.Context(), x.user, x.session)
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
func (m *Module) callHandler(t tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		x, err := exchange(ctx)
		if err != nil {
			return nil, err
		}
		raw := bytes.TrimSpace(req.Params.Arguments)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			raw = []byte("{}")
		}
		res, err := m.run(x.r, t, toolCall{user: x.user, session: x.session}, raw)
		if errors.Is(err, errNotArguments) {
			res, err = failed("The arguments of %s are not a JSON object. Call %s again with a JSON object of its parameters.", t.name, t.name), nil
		}
		if err != nil {
			m.metrics.call(t.name, "failed")
			return nil, x.fail(err)
		}
		outcome := "ok"
		if res.IsError {
			outcome = "is_error"
		}
		m.metrics.call(t.name, outcome)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Result}}, IsError: res.IsError}, nil
	}
}

func (m *Module) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	x, err := exchange(ctx)
	if err != nil {
		return nil, err
	}
	var wantFrozen bool
	switch req.Params.Arguments["frozen"] {
	case "", "false":
	case "true":
		wantFrozen = true
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `argument "frozen" must be "true" or "false"`}
	}
	f, err := m.prompt(x.r, x.user, x.session, wantFrozen)
	if err != nil {
		return nil, x.fail(err)
	}
	return &mcp.GetPromptResult{
		Description: "The system prompt of this conversation (" + strconv.Itoa(f.tokens) + " tokens): give it to the model as its system prompt.",
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: f.prompt}}},
	}, nil
}

// listResources adds the session's resources to resources/list: the
// system prompt, then each block.
func (m *Module) listResources(x *mcpExchange, res *mcp.ListResourcesResult) error {
	v, err := m.store.Read(x.r.Context(), x.user, x.session, false)
	if err != nil {
		return x.fail(err)
	}
	res.Resources = append(res.Resources, &mcp.Resource{URI: x.uri("system-prompt"), Name: "system-prompt", Title: "System prompt",
		MIMEType: "text/plain", Description: "The system prompt of this conversation, rendered from its context blocks now."})
	for _, b := range v.blocks {
		r := &mcp.Resource{URI: x.uri("blocks/" + b.Label), Name: b.Label, MIMEType: "application/json"}
		if b.Description != nil {
			r.Description = *b.Description
		}
		res.Resources = append(res.Resources, r)
	}
	return nil
}

// readResource reads a resource of the session: the system prompt or a
// block (any other URI, another session's too, is not found).
func (m *Module) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	x, err := exchange(ctx)
	if err != nil {
		return nil, err
	}
	uri := req.Params.URI
	if uri == x.uri("system-prompt") {
		return m.readPrompt(x, uri)
	}
	if label, ok := strings.CutPrefix(uri, x.uri("blocks/")); ok {
		return m.readBlock(x, uri, label)
	}
	return nil, mcp.ResourceNotFoundError(uri)
}

func (m *Module) readPrompt(x *mcpExchange, uri string) (*mcp.ReadResourceResult, error) {
	f, err := m.prompt(x.r, x.user, x.session, false)
	if err != nil {
		return nil, x.fail(err)
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: "text/plain", Text: f.prompt}
	if f.prompt == "" {
		// The SDK drops an empty text (go-sdk#1149), which a strict client
		// refuses: an empty blob says the same.
		c.Blob = []byte{}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

func (m *Module) readBlock(x *mcpExchange, uri, label string) (*mcp.ReadResourceResult, error) {
	if !sidecar.ValidID(label) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	b, err := m.store.Get(x.r.Context(), x.user, x.session, strings.ToLower(label))
	if errors.Is(err, redisstore.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, x.fail(err)
	}
	text, err := json.Marshal(b)
	if err != nil {
		return nil, x.fail(err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(text)}}}, nil
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
