package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/openapi"
	"github.com/agentsidecar/agentsidecar/openapi/openapitest"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// These tests keep openapi/openapi.json true to the product: the same routes
// as the modules register, served on the ops listener, and examples that
// work against a live sidecar whose answers match the documented schemas.

func openapiDoc(t *testing.T) *openapitest.Doc {
	t.Helper()
	d, err := openapitest.Parse(openapi.JSON())
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return d
}

// TestOpenAPIRoutes: the (method, path) pairs of the document are exactly the
// ServeMux patterns of every module the product ships, both ways.
func TestOpenAPIRoutes(t *testing.T) {
	registered := modulePatterns(t, redisstoretest.New(t).Conn(t))
	var documented []string
	for _, o := range openapiDoc(t).Operations() {
		documented = append(documented, o.Pattern())
	}
	for _, p := range registered {
		if !slices.Contains(documented, p) {
			t.Errorf("route %q is registered but not in openapi/openapi.json", p)
		}
	}
	for _, p := range documented {
		if !slices.Contains(registered, p) {
			t.Errorf("openapi/openapi.json documents %q, which no module registers", p)
		}
	}
	if len(registered) != len(documented) {
		t.Errorf("%d routes registered, %d operations documented", len(registered), len(documented))
	}
}

// TestOpenAPIQueryParameters: the query parameters each operation
// documents are exactly those its route takes (sidecar.Route.Query), which
// the host enforces: any other is 400 unknown_parameter. The free-form
// metadata.<key> filters are documented in the operation's description.
func TestOpenAPIQueryParameters(t *testing.T) {
	d := openapiDoc(t)
	ops := map[string]openapitest.Operation{}
	for _, o := range d.Operations() {
		ops[o.Pattern()] = o
	}
	for _, rt := range moduleRoutes(t, redisstoretest.New(t).Conn(t)) {
		o, ok := ops[rt.Pattern]
		if !ok {
			continue // TestOpenAPIRoutes
		}
		params, err := d.Parameters(o)
		if err != nil {
			t.Fatal(err)
		}
		var documented []string
		for _, p := range params {
			if p["in"] == "query" {
				documented = append(documented, p["name"].(string))
			}
		}
		takes := slices.DeleteFunc(slices.Clone(rt.Query), func(q string) bool { return q == "metadata.*" })
		slices.Sort(documented)
		slices.Sort(takes)
		if !slices.Equal(documented, takes) {
			t.Errorf("%s (%s): documents query parameters %v, the route takes %v", o.ID, rt.Pattern, documented, takes)
		}
		if len(takes) != len(rt.Query) && !strings.Contains(fmt.Sprint(o.Op["description"]), "metadata.<key>") {
			t.Errorf("%s takes metadata.<key> parameters, which its description does not name", o.ID)
		}
	}
}

// TestOpenAPIServed: the ops listener answers GET /openapi.json with it,
// without the API token; the API's 401 is as documented.
func TestOpenAPIServed(t *testing.T) {
	h := sidecartest.Start(t, redisstoretest.New(t), envconf.Env{"SIDECAR_API_TOKEN": "s3cret"}, modules.All()...)
	d := openapiDoc(t)
	stats, _ := d.Op("getSessionStats")
	rep := h.Do(t, "GET", "/v1/sessions/stats", "")
	checkDocumented(t, d, stats, rep, 401)
	if rep.Code() != "unauthorized" || rep.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("401: code %q, WWW-Authenticate %q", rep.Code(), rep.Header.Get("WWW-Authenticate"))
	}
	checkDocumented(t, d, stats, h.Do(t, "GET", "/v1/sessions/stats", "", "Authorization", "Bearer s3cret"), 200)

	rep = sidecartest.Do(t, "GET", h.Ops+"/openapi.json", "")
	if rep.Status != 200 || rep.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %q", rep.Status, rep.Header.Get("Content-Type"))
	}
	if rep.Body != string(openapi.JSON()) {
		t.Fatal("GET /openapi.json: body differs from openapi.JSON()")
	}
	// Not on the API listener: that one serves /v1 only.
	if rep := h.Do(t, "GET", "/openapi.json", "", "Authorization", "Bearer s3cret"); rep.Status != 404 {
		t.Errorf("API listener GET /openapi.json: %d, want 404", rep.Status)
	}
}

// call is one request built from the document's examples.
type call struct {
	op     openapitest.Operation
	path   map[string]string // path parameter overrides
	body   string            // overrides the request body example ("" = the example)
	query  url.Values        // query parameters added to the examples
	status int               // the expected status (0 = any documented 2xx)
}

// TestOpenAPIExamples runs every operation of the document, in an order that
// makes sense, with its path, query, header and body examples, against a live
// sidecar: each must answer a documented 2xx whose body matches the
// documented schema. Then the documented error answers: a bad path id, a
// non-JSON Content-Type, an unknown field.
func TestOpenAPIExamples(t *testing.T) {
	d := openapiDoc(t)
	srv := redisstoretest.New(t)
	h := sidecartest.Start(t, srv, nil, modules.All()...)
	driveExamples(t, d, h, h, nil)
	driveConflicts(t, d, srv, h, nil)
}

// driveConflicts: reads and writes of keys another program wrote with
// another type or a state that is not an object, through h: each must
// answer a documented 409 with its code.
func driveConflicts(t *testing.T, d *openapitest.Doc, srv *redisstoretest.Server, h *sidecartest.Host, seen func(openapitest.Operation, sidecartest.Reply)) {
	c := srv.Client(t)
	l := srv.Layout()
	set := func(key, value string) {
		t.Helper()
		if err := c.Do(t.Context(), c.B().Set().Key(key).Value(value).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	k := l.Session("alice", "wrong-1")
	set(k.Entries, "x")
	set(k.Context, "x")
	set(l.SessionEvents("alice", "wrong-1"), "x")
	set(l.UserKey(registry.UserStateFamily, "alice"), "[1,2]")
	wrong := map[string]string{"session_id": "wrong-1"}
	for _, tc := range []struct {
		id, code string
		path     map[string]string
	}{
		{"listEntries", "key_wrong_type", wrong},
		{"searchEntries", "key_wrong_type", wrong},
		{"appendEntry", "key_wrong_type", wrong},
		{"listContext", "key_wrong_type", wrong},
		{"appendContext", "key_wrong_type", wrong},
		{"getUserState", "state_unreadable", nil},
	} {
		o, ok := d.Op(tc.id)
		if !ok {
			t.Fatalf("no operation %s", tc.id)
		}
		rep := doRaw(t, d, h, call{op: o, path: tc.path})
		checkDocumented(t, d, o, rep, 409)
		wantCode(t, o, rep, tc.code)
		if seen != nil {
			seen(o, rep)
		}
	}
}

// driveExamples is TestOpenAPIExamples' drive through h (the sidecar, or a
// validating proxy in front of it), event streams through streams (a
// proxy that waits for the end of an answer never ends a stream); seen,
// when set, gets every other answer.
func driveExamples(t *testing.T, d *openapitest.Doc, h, streams *sidecartest.Host, seen func(openapitest.Operation, sidecartest.Reply)) {
	doRaw := func(t *testing.T, d *openapitest.Doc, h *sidecartest.Host, c call, header ...string) sidecartest.Reply {
		t.Helper()
		if isStream(t, d, c.op) {
			return doRaw(t, d, streams, c, header...)
		}
		rep := doRaw(t, d, h, c, header...)
		if seen != nil {
			seen(c.op, rep)
		}
		return rep
	}
	do := func(t *testing.T, d *openapitest.Doc, h *sidecartest.Host, c call) sidecartest.Reply {
		t.Helper()
		rep := doRaw(t, d, h, c)
		checkDocumented(t, d, c.op, rep, c.status)
		return rep
	}
	get := func(id string) openapitest.Operation {
		t.Helper()
		o, ok := d.Op(id)
		if !ok {
			t.Fatalf("no operation %s", id)
		}
		return o
	}
	var lockToken string
	steps := []struct {
		id     string
		status int
		edit   func(c *call)
	}{
		{"appendEntry", 201, nil},
		// an abort pending from here to clearAbort, and again from the
		// messages on: every answer carrying Sidecar-Abort-Requested must
		// declare it
		{"requestAbort", 202, nil},
		{"appendEntry", 200, nil}, // the retry
		{"listEntries", 200, nil},
		{"getEntry", 200, nil},
		{"updateEntry", 200, nil},
		{"updateEntry", 404, func(c *call) { c.path = map[string]string{"qa_id": "nope"} }}, // a refusal carries the abort too
		{"setFeedback", 200, nil},
		{"clearFeedback", 200, nil},
		{"searchEntries", 200, nil},
		{"appendTrace", 201, nil},
		{"listTraces", 200, nil},
		{"appendContext", 201, nil},
		{"appendContext", 200, nil},
		{"listContext", 200, nil},
		{"updateContext", 200, nil},
		{"getSessionTTL", 200, nil},
		{"setSessionTTL", 200, nil},
		{"getSession", 200, nil},
		{"recordUsage", 201, nil},
		{"recordUsage", 200, nil}, // same Idempotency-Key
		{"createSession", 201, nil},
		{"createSession", 200, nil}, // same Idempotency-Key
		{"updateSession", 200, nil},
		{"startSession", 201, nil},
		{"startSession", 200, nil}, // reused
		{"endActiveSession", 200, nil},
		{"patchSessionState", 200, nil},
		{"getSessionState", 200, nil},
		{"patchUserState", 200, nil},
		{"getUserState", 200, nil},
		{"putUserBlock", 201, nil},
		{"putUserBlock", 200, nil}, // replaced
		{"appendUserBlock", 200, nil},
		{"getUserBlock", 200, nil},
		{"listUserBlocks", 200, nil},
		{"putSessionBlock", 201, nil},
		{"appendSessionBlock", 200, nil},
		{"getSessionBlock", 200, nil},
		{"listSessionBlocks", 200, nil},
		{"getSystemPrompt", 200, nil},
		{"refreshSystemPrompt", 200, nil},
		{"listTools", 200, nil},
		{"callTool", 200, nil},
		{"mcp", 200, nil}, // tools/call search_context, finding what callTool wrote
		{"deleteSessionBlock", 204, nil},
		{"deleteUserBlock", 204, nil},
		{"getUserEvents", 200, nil},
		{"publishSessionEvent", 201, nil},
		{"getSessionEvents", 200, nil},
		{"requestAbort", 202, nil},
		{"requestAbort", 202, nil}, // a repeat
		{"clearAbort", 204, nil},
		{"completeSession", 200, nil},
		{"recordUsage", 201, func(c *call) { c.path = map[string]string{"session_id": "chat-2"} }},
		{"failSession", 200, func(c *call) { c.path = map[string]string{"session_id": "chat-2"} }},
		{"listUserSessions", 200, nil},
		{"listSessions", 200, nil},
		{"getSessionStats", 200, nil},
		{"getCostByModel", 200, nil},
		{"createAdkSession", 201, nil},
		{"createAdkSession", 409, nil}, // session_exists
		{"appendAdkEvent", 201, nil},
		{"appendAdkEvent", 201, nil}, // the same event id: replaced
		{"appendAdkEvent", 409, func(c *call) { // stale_session
			c.body = `{"event":{"id":"e-2","timestamp":4102444800001},"last_update_time":1764000000000}`
		}},
		{"getAdkSession", 200, nil},
		{"listAdkSessions", 200, nil},
		{"listAdkAppSessions", 200, nil},
		{"deleteAdkSession", 204, nil},
		{"acquireLock", 200, nil},
		{"inspectLock", 200, nil},
		{"refreshLock", 200, func(c *call) { c.body = `{"token":"` + lockToken + `","ttl_ms":30000}` }},
		{"releaseLock", 200, func(c *call) { c.body = `{"token":"` + lockToken + `"}` }},
		{"appendMessages", 201, nil}, // a user message: clears an abort
		{"requestAbort", 202, nil},
		{"appendMessages", 200, nil}, // same Idempotency-Key
		{"putMessage", 201, func(c *call) { c.path = map[string]string{"message_id": "m2"} }},
		{"putMessage", 200, func(c *call) { c.path = map[string]string{"message_id": "m2"} }},
		{"listMessages", 200, nil},
		{"createCompaction", 201, nil},
		{"listMessages", 200, nil}, // the compaction's synthetic message, id compaction:<uuid>
		{"listCompactions", 200, nil},
		{"searchUser", 200, nil},
		{"forkSession", 201, nil},
		{"splitSession", 201, func(c *call) { c.path = map[string]string{"session_id": "chat-1-fork"} }},
		{"getMessage", 200, nil},
		{"listChildren", 200, nil},
		{"patchMessage", 200, nil},
		{"popMessage", 200, nil}, // m2
		{"deleteMessage", 204, nil},
		{"applyMessageTransaction", 201, nil},
		{"applyMessageTransaction", 200, nil}, // a repeat of the operation id
		{"clearMessages", 204, nil},
		{"putCheckpointWrites", 200, nil}, // before its checkpoint, as LangGraph may
		{"putCheckpoint", 200, nil},
		{"getCheckpointTuple", 200, nil},
		{"getCheckpointTuple", 404, func(c *call) { c.query = url.Values{"checkpoint_ns": {"nope"}} }},
		{"listCheckpoints", 200, nil},
		{"deleteContext", 204, nil},
		{"deleteEntry", 204, nil},
		{"deleteSession", 204, nil},
		// another user: alice's writes below would be refused while her erasure settles
		{"eraseUser", 200, func(c *call) { c.path = map[string]string{"user_id": "erin"} }},
	}
	covered := map[string]bool{}
	for i, s := range steps {
		c := call{op: get(s.id), status: s.status}
		if s.edit != nil {
			s.edit(&c)
		}
		rep := do(t, d, h, c)
		if i == 0 {
			watchAlice(t, streams)
		}
		covered[s.id] = true
		if s.id == "acquireLock" {
			var g struct{ Token string }
			rep.JSON(t, &g)
			lockToken = g.Token
		}
	}
	for _, o := range d.Operations() {
		if !covered[o.ID] {
			t.Errorf("%s: not exercised by TestOpenAPIExamples", o.ID)
		}
	}

	// Documented errors, operation by operation.
	for _, o := range d.Operations() {
		params, err := d.Parameters(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range params {
			if p["in"] == "path" {
				rep := do(t, d, h, call{op: o, path: map[string]string{p["name"].(string): "a:b"}, status: 400})
				wantCode(t, o, rep, "invalid_id")
				break
			}
		}
		// Every listing's cursor, whatever its form (an opaque next_cursor,
		// a message or checkpoint id, an event id), refuses a value it
		// never answered with the one code.
		for _, p := range params {
			if name := p["name"].(string); p["in"] == "query" && (name == "cursor" || name == "before" || name == "after") {
				rep := do(t, d, h, call{op: o, query: url.Values{name: {strings.Repeat("x", 300)}}, status: 400})
				wantCode(t, o, rep, "invalid_cursor")
			}
		}
		rep := do(t, d, h, call{op: o, query: url.Values{"lastn": {"3"}}, status: 400})
		wantCode(t, o, rep, "unknown_parameter")
		body, ok := o.Op["requestBody"].(map[string]any)
		if !ok {
			continue
		}
		rep = doRaw(t, d, h, call{op: o, body: "x"}, "Content-Type", "text/plain")
		checkDocumented(t, d, o, rep, 415)
		wantCode(t, o, rep, "unsupported_media_type")
		schema, err := d.Deref(openapitest.JSONMedia(body)["schema"])
		if err != nil {
			t.Fatal(err)
		}
		if schema["additionalProperties"] == false {
			rep := do(t, d, h, call{op: o, body: `{"nope":1}`, status: 400})
			wantCode(t, o, rep, "unknown_field")
		}
	}
}

func wantCode(t *testing.T, o openapitest.Operation, rep sidecartest.Reply, code string) {
	t.Helper()
	if rep.Code() != code {
		t.Errorf("%s: code %q, want %q (%s)", o.ID, rep.Code(), code, rep.Body)
	}
}

// do sends c and checks the answer against the document.
func do(t *testing.T, d *openapitest.Doc, h *sidecartest.Host, c call) sidecartest.Reply {
	t.Helper()
	rep := doRaw(t, d, h, c)
	checkDocumented(t, d, c.op, rep, c.status)
	return rep
}

// doRaw sends c built from the operation's examples, with extra headers.
func doRaw(t *testing.T, d *openapitest.Doc, h *sidecartest.Host, c call, header ...string) sidecartest.Reply {
	t.Helper()
	params, err := d.Parameters(c.op)
	if err != nil {
		t.Fatal(err)
	}
	path := c.op.Path
	query := url.Values{}
	for _, p := range params {
		name := p["name"].(string)
		ex, hasEx := p["example"]
		val := ""
		if hasEx {
			val = scalar(ex)
		}
		switch p["in"] {
		case "path":
			if v, ok := c.path[name]; ok {
				val = v
			}
			path = strings.ReplaceAll(path, "{"+name+"}", url.PathEscape(val))
		case "query":
			if hasEx {
				query.Set(name, val)
			}
		case "header":
			if hasEx {
				header = append(header, name, val)
			}
		}
	}
	for k, v := range c.query {
		query[k] = v
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	body := c.body
	if rb, ok := c.op.Op["requestBody"].(map[string]any); ok && body == "" {
		b, err := json.Marshal(openapitest.JSONMedia(rb)["example"])
		if err != nil {
			t.Fatal(err)
		}
		body = string(b)
	}
	if isStream(t, d, c.op) {
		// An event stream: read up to its reconnected marker and the
		// first event after it (the examples resume with after=0).
		return h.Stream(t, path, func(b string) bool {
			_, rest, ok := strings.Cut(b, "event: reconnected\n")
			return ok && strings.Contains(rest, "\n\nid: ") && strings.HasSuffix(rest, "\n\n")
		}, header...)
	}
	return h.Do(t, c.op.Method, path, body, header...)
}

// isStream reports whether o answers Server-Sent Events.
func isStream(t *testing.T, d *openapitest.Doc, o openapitest.Operation) bool {
	r, ok, err := d.Response(o, 200)
	if err != nil {
		t.Fatal(err)
	}
	return ok && openapitest.EventStreamMedia(r) != nil
}

// checkStream checks an event stream: its content type, retry first, and
// every data line one JSON value.
func checkStream(t *testing.T, o openapitest.Operation, rep sidecartest.Reply) {
	t.Helper()
	if ct := rep.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("%s: Content-Type %q, want text/event-stream", o.ID, ct)
	}
	if !strings.HasPrefix(rep.Body, "retry: 3000\n\n") {
		t.Errorf("%s: the stream does not open with retry: 3000: %q", o.ID, rep.Body)
	}
	for _, line := range strings.Split(rep.Body, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && !json.Valid([]byte(data)) {
			t.Errorf("%s: data line is not JSON: %q", o.ID, data)
		}
	}
}

// checkDocumented fails unless the answer's status is documented for the
// operation (and is want, when want is not 0, else a 2xx) and its body
// matches the documented schema.
func checkDocumented(t *testing.T, d *openapitest.Doc, o openapitest.Operation, rep sidecartest.Reply, want int) {
	t.Helper()
	if (want != 0 && rep.Status != want) || (want == 0 && rep.Status/100 != 2) {
		t.Errorf("%s %s: status %d, want %d: %s", o.ID, o.Pattern(), rep.Status, want, rep.Body)
		return
	}
	r, ok, err := d.Response(o, rep.Status)
	if err != nil || !ok {
		t.Errorf("%s: status %d is not documented (%v)", o.ID, rep.Status, err)
		return
	}
	headers, _ := r["headers"].(map[string]any)
	for name := range rep.Header {
		if _, ok := headers[name]; strings.HasPrefix(name, "Sidecar-") && !ok {
			t.Errorf("%s %d: the answer carries %s, which the document does not declare", o.ID, rep.Status, name)
		}
	}
	if openapitest.EventStreamMedia(r) != nil {
		checkStream(t, o, rep)
		return
	}
	media := openapitest.JSONMedia(r)
	if media == nil {
		if rep.Body != "" {
			t.Errorf("%s %d: documented without a body, answered %q", o.ID, rep.Status, rep.Body)
		}
		return
	}
	if ct := rep.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %d: Content-Type %q", o.ID, rep.Status, ct)
	}
	if err := d.ValidateJSON(media["schema"], []byte(rep.Body)); err != nil {
		t.Errorf("%s %d: answer does not match the documented schema: %v\n%s", o.ID, rep.Status, err, rep.Body)
	}
	if examples, ok := media["examples"].(map[string]any); ok && rep.Code() != "" {
		if _, ok := examples[rep.Code()]; !ok {
			t.Errorf("%s %d: code %q is not documented", o.ID, rep.Status, rep.Code())
		}
	}
}

func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}
