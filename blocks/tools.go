package blocks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// tool is one tool the module offers an LLM. Adding a tool is one entry in
// tools: its name, description, parameters for the blocks at hand and its
// call.
type tool struct {
	name        string
	description string
	readOnly    bool // writes nothing (MCP's readOnlyHint)
	// parameters is the JSON Schema of the arguments given the session's
	// blocks, or nil when the tool has nothing to act on (not offered).
	parameters func(v view) map[string]any
	// call runs the tool on arguments (a JSON object). A mistake of the
	// model is a result with isError; an error is the sidecar's (Redis).
	call func(m *Module, r *http.Request, c toolCall) (toolResult, error)
}

// toolCall is one call of a tool by a model.
type toolCall struct {
	user, session string
	args          []byte // a JSON object
	id            string // tool_call_id, "" for none
}

// toolResult is the answer of POST .../tools/{name}: the text for the model.
type toolResult struct {
	Result  string `json:"result"`
	IsError bool   `json:"is_error"`
}

func failed(format string, args ...any) toolResult {
	return toolResult{Result: fmt.Sprintf(format, args...), IsError: true}
}

// tools are the tools of a session, in the order they are listed.
var tools = []tool{setContext, searchContext, sessionSearch}

func findTool(name string) (tool, bool) {
	for _, t := range tools {
		if t.name == name {
			return t, true
		}
	}
	return tool{}, false
}

func toolNames() string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.name
	}
	return strings.Join(names, ", ")
}

// offer is a tool as a model is given it: the JSON Schema of its
// arguments for the session's blocks at hand.
type offer struct {
	tool
	params map[string]any
}

// offers are the tools the session offers a model, in the order they are
// listed: those with something to act on. GET .../tools and the MCP
// server's tools/list both answer them.
func (m *Module) offers(ctx context.Context, user, session string) ([]offer, error) {
	v, err := m.store.Read(ctx, user, session, false)
	if err != nil {
		return nil, err
	}
	if v.searchable, err = m.store.searchable(ctx, user); err != nil {
		return nil, err
	}
	var out []offer
	for _, t := range tools {
		if params := t.parameters(v); params != nil {
			out = append(out, offer{tool: t, params: params})
		}
	}
	return out, nil
}

// toolsJSON is the answer of GET .../tools.
type toolsJSON struct {
	Tools []map[string]any `json:"tools"`
}

func (m *Module) listTools(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	format := r.URL.Query().Get("format")
	switch format {
	case "":
		format = "openai"
	case "openai", "anthropic":
	default:
		return sidecar.BadRequest("invalid_query", "format must be openai or anthropic")
	}
	offers, err := m.offers(r.Context(), user, session)
	if err != nil {
		return err
	}
	out := toolsJSON{Tools: []map[string]any{}}
	for _, o := range offers {
		if format == "anthropic" {
			out.Tools = append(out.Tools, map[string]any{"name": o.name, "description": o.description, "input_schema": o.params})
		} else {
			out.Tools = append(out.Tools, map[string]any{"type": "function",
				"function": map[string]any{"name": o.name, "description": o.description, "parameters": o.params}})
		}
	}
	sidecar.WriteJSON(w, http.StatusOK, out)
	return nil
}

// MaxToolCallID is the longest tool_call_id.
const MaxToolCallID = 256

type callRequest struct {
	Arguments  json.RawMessage `json:"arguments"`
	ToolCallID *string         `json:"tool_call_id"`
}

func (m *Module) callTool(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	t, ok := findTool(name)
	if !ok {
		if len(name) > 64 {
			name = name[:64] + "..."
		}
		return sidecar.NotFound("no tool %q; the tools are %s", name, toolNames())
	}
	var req callRequest
	if err := sidecar.DecodeJSON(r, &req); err != nil {
		return err
	}
	c := toolCall{user: user, session: session}
	if req.ToolCallID != nil {
		if !validToolCallID(*req.ToolCallID) {
			return sidecar.BadRequest("invalid_field", "field \"tool_call_id\" must be 1-%d printable ASCII characters without spaces", MaxToolCallID)
		}
		c.id = *req.ToolCallID
	}
	raw := bytes.TrimSpace(req.Arguments)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return sidecar.BadRequest("invalid_field", "field \"arguments\" is required: the tool call's arguments, an object or the JSON string the model produced")
	}
	res, err := m.run(r, t, c, raw)
	if errors.Is(err, errNotArguments) {
		return sidecar.BadRequest("invalid_field", "field \"arguments\" must be an object or the JSON string the model produced")
	}
	if err != nil {
		return err
	}
	sidecar.WriteJSON(w, http.StatusOK, res)
	return nil
}

// errNotArguments: a tool call's arguments are neither an object nor a
// JSON string (the caller's mistake, not the model's).
var errNotArguments = errors.New("arguments are neither an object nor a JSON string")

// run runs a model's call of t with raw arguments (trimmed, not empty): a
// JSON object, or the JSON string of one as a model produced it (a string
// that holds no object is the model's mistake: an error result). Any
// other JSON value is errNotArguments. POST .../tools/{name} and the MCP
// server's tools/call both run their calls through it.
func (m *Module) run(r *http.Request, t tool, c toolCall, raw []byte) (toolResult, error) {
	switch raw[0] {
	case '{':
		c.args = raw
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return toolResult{}, errNotArguments
		}
		s = strings.TrimSpace(s)
		if s == "" {
			s = "{}"
		}
		if !json.Valid([]byte(s)) || s[0] != '{' {
			return failed("The arguments of %s are not a JSON object: %.200q. Call %s again with a JSON object of its parameters.", t.name, s, t.name), nil
		}
		c.args = []byte(s)
	default:
		return toolResult{}, errNotArguments
	}
	return t.call(m, r, c)
}

func validToolCallID(s string) bool {
	if s == "" || len(s) > MaxToolCallID {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// decodeArgs decodes a tool's arguments strictly into v; the error is a
// text for the model naming what is wrong.
func decodeArgs(name string, args []byte, v any) (toolResult, bool) {
	if err := sidecar.DecodeJSONBytes(args, v); err != nil {
		msg := err.Error()
		if e, ok := err.(*sidecar.Error); ok {
			msg = e.Message
		}
		return failed("Invalid arguments for %s: %s. Nothing was done; call it again with corrected arguments.", name, msg), false
	}
	return toolResult{}, true
}

// writable returns the labels of the writable blocks of v.
func writable(v view) []string {
	var out []string
	for _, b := range v.blocks {
		if b.Writable {
			out = append(out, b.Label)
		}
	}
	return out
}

var setContext = tool{
	name: "set_context",
	description: "Save information to one of your context blocks, which are part of your system prompt in later turns. " +
		"action \"replace\" (the default) overwrites the block's content; \"append\" adds to its end (start the content with a newline to add a line). " +
		"A block holds a limited number of tokens: when a write is refused as too large, replace the block with a shorter version.",
	parameters: func(v view) map[string]any {
		labels := writable(v)
		if len(labels) == 0 {
			return nil
		}
		return map[string]any{
			"type": "object",
			"properties": map[string]any{
				"label":   map[string]any{"type": "string", "enum": labels, "description": "the block to write"},
				"content": map[string]any{"type": "string", "description": "the text to write"},
				"action":  map[string]any{"type": "string", "enum": []string{actionReplace, actionAppend}, "default": actionReplace, "description": "replace the block's content, or append to it"},
			},
			"required":             []string{"label", "content"},
			"additionalProperties": false,
		}
	},
	call: callSetContext,
}

type setContextArgs struct {
	Label   *string `json:"label"`
	Content *string `json:"content"`
	Action  *string `json:"action"`
}

func callSetContext(m *Module, r *http.Request, c toolCall) (toolResult, error) {
	var a setContextArgs
	if res, ok := decodeArgs("set_context", c.args, &a); !ok {
		return res, nil
	}
	if a.Label == nil || a.Content == nil {
		return failed("set_context needs \"label\" (a block's label) and \"content\" (the text); nothing was written."), nil
	}
	action := actionReplace
	if a.Action != nil {
		action = *a.Action
	}
	if action != actionReplace && action != actionAppend {
		return failed("\"action\" must be \"replace\" or \"append\", not %.40q; nothing was written.", action), nil
	}
	label := strings.ToLower(*a.Label)
	if len(*a.Content) > m.cfg.MaxContentBytes {
		return failed("The content is %d bytes; a block holds at most %d. Nothing was written: write a shorter content.", len(*a.Content), m.cfg.MaxContentBytes), nil
	}
	if !sidecar.ValidID(label) {
		return m.noBlock(r, c, *a.Label)
	}
	res, err := m.store.Set(r.Context(), c.user, c.session, setCall{scope: scopeSession, label: label, action: action,
		content: *a.Content, tool: true, toolCallID: c.id})
	if errors.Is(err, redisstore.ErrNotFound) {
		return m.noBlock(r, c, label)
	}
	if err != nil {
		return toolResult{}, err
	}
	switch res.code {
	case setWritten:
		return toolResult{Result: outcomeText(res.outcome)}, nil
	case setFull:
		return failed("Block %q is full: the new content would take %d tokens and the block holds at most %d. Nothing was written. "+
			"Write a shorter content, or replace the block's content with a condensed version of what it holds.", label, res.n, res.most), nil
	case setReadOnly:
		return m.readOnly(r, c, label)
	case setTooLarge:
		return failed("Block %q would hold %d bytes, over its limit of %d. Nothing was written: replace its content with a shorter version.", label, res.n, res.most), nil
	}
	return failed("Block %q cannot be written (its stored value is damaged); nothing was written. Use another block.", label), nil
}

// outcomeText is set_context's result from the script's outcome
// ("<label>\t<action>\t<scope>\t<tokens>\t<max>"), the same for a repeat.
func outcomeText(outcome string) string {
	f := strings.Split(outcome, "\t")
	if len(f) != 5 {
		return "Saved."
	}
	verb := "Replaced the content of"
	if f[1] == actionAppend {
		verb = "Appended to"
	}
	size := f[3] + " tokens"
	if f[4] != "" {
		size = f[3] + "/" + f[4] + " tokens"
	}
	return fmt.Sprintf("%s block %q (%s block); it now holds %s.", verb, f[0], f[2], size)
}

func (m *Module) writableList(r *http.Request, c toolCall) (string, error) {
	v, err := m.store.Read(r.Context(), c.user, c.session, false)
	if err != nil {
		return "", err
	}
	labels := writable(v)
	if len(labels) == 0 {
		return "There is no writable block.", nil
	}
	return "Writable blocks: " + strings.Join(labels, ", ") + ".", nil
}

func (m *Module) noBlock(r *http.Request, c toolCall, label string) (toolResult, error) {
	list, err := m.writableList(r, c)
	if err != nil {
		return toolResult{}, err
	}
	return failed("There is no block %.80q; nothing was written. %s", label, list), nil
}

func (m *Module) readOnly(r *http.Request, c toolCall, label string) (toolResult, error) {
	list, err := m.writableList(r, c)
	if err != nil {
		return toolResult{}, err
	}
	return failed("Block %q is read-only; nothing was written. %s", label, list), nil
}

// MaxSearchResults is the most lines search_context returns.
const MaxSearchResults = 10

var searchContext = tool{
	name:     "search_context",
	readOnly: true,
	description: "Search the text of your context blocks: returns the lines (at most 10) that contain every word of the query, " +
		"case-insensitively, each prefixed by its block's label.",
	parameters: func(v view) map[string]any {
		var labels []string
		for _, b := range v.blocks {
			if b.Content != "" {
				labels = append(labels, b.Label)
			}
		}
		if len(labels) == 0 {
			return nil
		}
		return map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query": map[string]any{"type": "string", "description": "words to find, all of them on one line"},
				"label": map[string]any{"type": "string", "enum": labels, "description": "search only this block"},
			},
			"required":             []string{"query"},
			"additionalProperties": false,
		}
	},
	call: callSearchContext,
}

type searchContextArgs struct {
	Query *string `json:"query"`
	Label *string `json:"label"`
}

func callSearchContext(m *Module, r *http.Request, c toolCall) (toolResult, error) {
	var a searchContextArgs
	if res, ok := decodeArgs("search_context", c.args, &a); !ok {
		return res, nil
	}
	if a.Query == nil || strings.TrimSpace(*a.Query) == "" {
		return failed("search_context needs \"query\": the words to find."), nil
	}
	words := strings.Fields(strings.ToLower(*a.Query))
	v, err := m.store.Read(r.Context(), c.user, c.session, false)
	if err != nil {
		return toolResult{}, err
	}
	var hits []string
	for _, b := range v.blocks {
		if a.Label != nil && !strings.EqualFold(b.Label, *a.Label) {
			continue
		}
		for line := range strings.Lines(b.Content) {
			line = strings.TrimRight(line, "\r\n")
			low := strings.ToLower(line)
			all := strings.TrimSpace(line) != ""
			for _, w := range words {
				if !strings.Contains(low, w) {
					all = false
					break
				}
			}
			if all && len(hits) < MaxSearchResults {
				hits = append(hits, "["+b.Label+"] "+line)
			}
		}
	}
	if len(hits) == 0 {
		return toolResult{Result: fmt.Sprintf("No line of the context blocks contains every word of %.200q.", *a.Query)}, nil
	}
	return toolResult{Result: strings.Join(hits, "\n")}, nil
}
