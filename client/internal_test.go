package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/agentsidecar/agentsidecar/openapi"
	"github.com/agentsidecar/agentsidecar/openapi/openapitest"
)

func TestErrorFrom(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	for _, tc := range []struct {
		name       string
		status     int
		header     http.Header
		body       string
		code, msg  string
		retryAfter time.Duration
	}{
		{"envelope", 404, nil, `{"error":{"code":"not_found","message":"no session a/b"}}` + "\n", "not_found", "no session a/b", 0},
		{"503 with Retry-After", 503, http.Header{"Retry-After": {"1"}}, `{"error":{"code":"redis_unavailable","message":"Redis is unavailable, retry shortly"}}`,
			"redis_unavailable", "Redis is unavailable, retry shortly", time.Second},
		{"Retry-After with spaces", 503, http.Header{"Retry-After": {" 7 "}}, `{"error":{"code":"redis_unavailable","message":"m"}}`, "redis_unavailable", "m", 7 * time.Second},
		{"negative Retry-After", 503, http.Header{"Retry-After": {"-3"}}, `{"error":{"code":"redis_unavailable","message":"m"}}`, "redis_unavailable", "m", 0},
		{"Retry-After in the past", 503, http.Header{"Retry-After": {"Wed, 21 Oct 2015 07:28:00 GMT"}}, ``, "", "", 0},
		{"bad Retry-After", 429, http.Header{"Retry-After": {"soon"}}, `slow down`, "", "slow down", 0},
		{"extra envelope fields", 409, nil, `{"error":{"code":"lock_held","message":"held","detail":1},"x":2}`, "lock_held", "held", 0},
		{"proxy page", 502, nil, "<html>Bad Gateway</html>\n", "", "<html>Bad Gateway</html>", 0},
		{"empty body", 500, nil, "", "", "", 0},
		{"JSON but no envelope", 400, nil, `{"message":"nope"}`, "", `{"message":"nope"}`, 0},
		{"envelope without code", 400, nil, `{"error":{"message":"nope"}}`, "", `{"error":{"message":"nope"}}`, 0},
		{"error is a string", 400, nil, `{"error":"nope"}`, "", `{"error":"nope"}`, 0},
		{"long body cut at a rune", 502, nil, long, "", strings.Repeat("é", 256) + "…", 0},
		{"invalid UTF-8", 502, nil, "a\xffb", "", "a\uFFFDb", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.header
			if h == nil {
				h = http.Header{}
			}
			e := errorFrom(tc.status, h, []byte(tc.body))
			if e.Status != tc.status || e.Code != tc.code || e.Message != tc.msg || e.RetryAfter != tc.retryAfter {
				t.Fatalf("got %#v, want %d %q %q %s", e, tc.status, tc.code, tc.msg, tc.retryAfter)
			}
			if !strings.HasPrefix(e.Error(), fmt.Sprintf("sidecar: %d ", tc.status)) {
				t.Errorf("Error() = %q", e.Error())
			}
		})
	}
	if d := retryAfter(time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)); d < 80*time.Second || d > 90*time.Second {
		t.Errorf("Retry-After as a date 90s ahead: %s", d)
	}
}

func TestErrorMatching(t *testing.T) {
	sentinels := map[string]error{CodeLockHeld: ErrHeld, CodeLockLost: ErrLost, CodeNotHeld: ErrNotHeld, CodeNotOwner: ErrNotOwner, CodeSessionEnded: ErrSessionEnded}
	all := []error{ErrHeld, ErrLost, ErrNotHeld, ErrNotOwner, ErrSessionEnded, ErrReleased, ErrBadID}
	for _, tc := range []struct {
		status                          int
		code                            string
		notFound, conflict, unavailable bool
	}{
		{404, CodeNotFound, true, false, false},
		{404, CodeNotHeld, true, false, false},
		{409, CodeLockHeld, false, true, false},
		{409, CodeLockLost, false, true, false},
		{409, CodeNotOwner, false, true, false},
		{409, CodeSessionEnded, false, true, false},
		{503, CodeRedisUnavailable, false, false, true},
		{400, CodeInvalidID, false, false, false},
		{401, CodeUnauthorized, false, false, false},
	} {
		err := fmt.Errorf("wrapped: %w", &Error{Status: tc.status, Code: tc.code, Message: "m"})
		if IsNotFound(err) != tc.notFound || IsConflict(err) != tc.conflict || IsUnavailable(err) != tc.unavailable {
			t.Errorf("%d %s: IsNotFound %v IsConflict %v IsUnavailable %v", tc.status, tc.code, IsNotFound(err), IsConflict(err), IsUnavailable(err))
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("%d %s: errors.As failed", tc.status, tc.code)
		}
		for _, s := range all {
			if want := sentinels[tc.code] == s; errors.Is(err, s) != want {
				t.Errorf("%d %s: errors.Is(%v) = %v, want %v", tc.status, tc.code, s, !want, want)
			}
		}
	}
	if IsNotFound(errors.New("404")) || IsNotFound(nil) {
		t.Error("IsNotFound of a non-*Error")
	}
}

func TestNullable(t *testing.T) {
	b, err := json.Marshal(UpdateEntryRequest{
		Context:               new(""),
		FeedbackText:          Null[string](),
		FeedbackScore:         Set(0),
		MemifyMetadata:        Set(map[string]any{}),
		UsedSessionContextIDs: Set([]string(nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"context":"","feedback_text":null,"feedback_score":0,"memify_metadata":{},"used_session_context_ids":null}`
	if string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	if v, ok := Set(3).Get(); v != 3 || !ok {
		t.Error("Set(3).Get()")
	}
	if _, ok := Null[int]().Get(); ok {
		t.Error("Null().Get() holds a value")
	}
	if b, _ := json.Marshal(FeedbackRequest{}); string(b) != `{}` {
		t.Errorf("empty FeedbackRequest: %s", b)
	}
}

// SessionQAEntry encodes as Cognee stores it: all ten fields in model
// order, nulls included.
func TestEntryEncoding(t *testing.T) {
	b, err := json.Marshal(SessionQAEntry{Time: "2026-11-21T23:15:37.123456+00:00", Question: "q", Answer: "a", QAID: "q1"})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"time":"2026-11-21T23:15:37.123456+00:00","question":"q","context":"","answer":"a","qa_id":"q1","feedback_text":null,` +
		`"feedback_score":null,"used_graph_element_ids":null,"memify_metadata":null,"used_session_context_ids":null}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
	for _, ts := range []string{"2026-11-21T23:15:37.123456+00:00", "2026-11-21T23:15:37.123456", "2026-11-21T23:15:37"} {
		got, err := (&SessionQAEntry{Time: ts}).Timestamp()
		if err != nil || !got.Truncate(time.Second).Equal(time.Date(2026, 11, 21, 23, 15, 37, 0, time.UTC)) {
			t.Errorf("Timestamp(%q) = %s, %v", ts, got, err)
		}
	}
}

// schemaTypes are the Go types of the document's object schemas. The
// others are not structs here: ids, maps and the error envelope.
var schemaTypes = map[string]any{
	"SessionQAEntry": SessionQAEntry{}, "GraphElementIds": GraphElementIDs{}, "AppendEntryRequest": AppendEntryRequest{},
	"UpdateEntryRequest": UpdateEntryRequest{}, "FeedbackRequest": FeedbackRequest{}, "AgentTrace": AgentTrace{},
	"AppendTraceRequest": AppendTraceRequest{}, "TTL": TTL{}, "SetTTLRequest": TTL{}, "ModelUsage": ModelUsage{},
	"SessionRecord": SessionRecord{}, "SessionList": SessionList{}, "UsageRequest": UsageRequest{}, "UsageResult": UsageResult{},
	"SessionStats": SessionStats{}, "ModelTotals": ModelTotals{}, "CostByModel": CostByModel{},
	"AcquireLockRequest": AcquireLockRequest{}, "RefreshLockRequest": RefreshLockRequest{}, "ReleaseLockRequest": releaseLockRequest{},
	"LockGrant": LockGrant{}, "LockReleased": lockReleased{}, "LockInfo": LockInfo{},
	"CreateSessionRequest": CreateSessionRequest{}, "UpdateSessionRequest": UpdateSessionRequest{}, "EndSessionRequest": EndSessionRequest{},
	"Erasure": Erasure{}, "StartSessionRequest": StartSessionRequest{}, "SessionStart": SessionStart{}, "SessionContext": SessionContext{},
	"EndActiveSessionRequest": EndActiveSessionRequest{},
	"Message":                 Message{}, "MessageInput": MessageInput{}, "MessageBatch": MessageBatch{}, "MessageTransaction": MessageTransaction{}, "MessageTransactionResult": MessageTransactionResult{}, "MessageList": MessageList{},
	"MessagePage": MessagePage{}, "MessagePatch": MessagePatch{},
	"ForkSessionRequest": ForkSessionRequest{}, "SplitSessionRequest": SplitSessionRequest{},
	"Compaction": Compaction{}, "CompactionRequest": CompactionRequest{}, "CompactionList": CompactionList{},
	"SearchResult": SearchResult{}, "SearchResults": SearchResults{},
	"Block": Block{}, "PutBlockRequest": PutBlockRequest{}, "AppendBlockRequest": AppendBlockRequest{}, "BlockList": BlockList{},
	"SystemPrompt": SystemPrompt{}, "ToolList": ToolList{}, "ToolCallRequest": ToolCallRequest{}, "ToolResult": ToolResult{},
	"CustomEvent": CustomEvent{}, "EventID": EventID{}, "AbortRequest": AbortRequest{},
	"CheckpointBlob": CheckpointBlob{}, "CheckpointChannelValue": CheckpointChannelValue{}, "CheckpointWrite": CheckpointWrite{},
	"PutCheckpointRequest": PutCheckpointRequest{}, "CheckpointRef": CheckpointRef{}, "PutCheckpointWritesRequest": PutCheckpointWritesRequest{},
	"CheckpointWritesStored": CheckpointWritesStored{}, "CheckpointTuple": CheckpointTuple{}, "CheckpointPage": CheckpointPage{},
	"AdkCreateRequest": AdkCreateRequest{}, "AdkSession": AdkSession{}, "AdkSessionList": AdkSessionList{},
	"AdkAppSessionList": AdkAppSessionList{},
	"AdkAppendRequest":  AdkAppendRequest{}, "AdkAppended": AdkAppended{},
}

var notStructs = []string{"Error", "Id", "MemifyMetadata", "StoredMemifyMetadata", "SessionStatus", "ContextEntry", "AppendContextRequest", "UpdateContextRequest", "Metadata", "State", "StatePatch",
	"AppendMessagesRequest", "AppendMessagesResult", "AdkState"}

// mcpSchemas are the MCP route's JSON-RPC messages: an MCP client speaks
// them, and this client has no method for the route (docs/mcp.md).
var mcpSchemas = []string{"McpMessage", "McpResponse", "McpError", "McpErrorObject"}

// TestTypesMatchSchemas: every struct has exactly its schema's properties
// as JSON names (nested objects included), and every schema has a type.
func TestTypesMatchSchemas(t *testing.T) {
	doc, err := openapitest.Parse(openapi.JSON())
	if err != nil {
		t.Fatal(err)
	}
	schemas := doc.Root["components"].(map[string]any)["schemas"].(map[string]any)
	for name, schema := range schemas {
		v, ok := schemaTypes[name]
		if !ok {
			if !slices.Contains(notStructs, name) && !slices.Contains(mcpSchemas, name) {
				t.Errorf("schema %s has no Go type in schemaTypes", name)
			}
			continue
		}
		compareStruct(t, doc, name, schema, reflect.TypeOf(v))
	}
}

func compareStruct(t *testing.T, doc *openapitest.Doc, at string, schema any, typ reflect.Type) {
	t.Helper()
	s, err := doc.Deref(schema)
	if err != nil {
		t.Fatalf("%s: %v", at, err)
	}
	props, _ := s["properties"].(map[string]any)
	fields := jsonFields(typ)
	var want, got []string
	for p := range props {
		want = append(want, p)
	}
	for f := range fields {
		got = append(got, f)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Errorf("%s: Go type %s has JSON fields %v, the schema %v", at, typ, got, want)
	}
	for p, ps := range props { // nested inline objects (SessionStats.sessions)
		if m, ok := ps.(map[string]any); ok && m["type"] == "object" && m["properties"] != nil {
			if ft, ok := fields[p]; ok {
				compareStruct(t, doc, at+"."+p, m, ft)
			}
		}
	}
}

// jsonFields maps the JSON names of typ's fields (embedded structs
// flattened, "-" skipped) to their types.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || (tag == "" && f.Anonymous) {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// TestMethodPerOperation: every operationId is a method of *Client, named
// as the operationId with its first letter upper-cased (but those MCP
// clients speak: ClientMethod).
func TestMethodPerOperation(t *testing.T) {
	doc, err := openapitest.Parse(openapi.JSON())
	if err != nil {
		t.Fatal(err)
	}
	ct := reflect.TypeFor[*Client]()
	ops := doc.Operations()
	if len(ops) == 0 {
		t.Fatal("no operations in the document")
	}
	for _, op := range ops {
		if !op.ClientMethod() {
			continue
		}
		name := string(unicode.ToUpper(rune(op.ID[0]))) + op.ID[1:]
		m, ok := ct.MethodByName(name)
		if !ok {
			t.Errorf("operation %s (%s): no method %s", op.ID, op.Pattern(), name)
			continue
		}
		if m.Type.NumIn() < 2 || m.Type.In(1) != reflect.TypeFor[context.Context]() {
			t.Errorf("%s: first argument %s, want context.Context", name, m.Type.In(1))
		}
	}
}
