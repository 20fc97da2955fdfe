package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// TestStrictBodies sends, to routes of every module, bodies another reader
// of the stored JSON would read differently or not at all: names in
// another case, nesting past sidecar.MaxDepth, numbers past float64,
// invalid UTF-8 and lone surrogates. Each is a 400 naming the field, and
// nothing is written.
func TestStrictBodies(t *testing.T) {
	srv := redisstoretest.New(t)
	h := sidecartest.Start(t, srv, nil, modules.All()...)
	const s = "/v1/users/alice/sessions/s1"
	deep := strings.Repeat(`[`, sidecar.MaxDepth+1) + strings.Repeat(`]`, sidecar.MaxDepth+1)
	for _, tc := range []struct {
		method, path, body, code, names string
	}{
		{"POST", s + "/entries", `{"question":"q","Question":"r","answer":"a"}`, "unknown_field", `"Question"`},
		{"POST", s + "/entries", `{"QUESTION":"q","ANSWER":"a"}`, "unknown_field", `"QUESTION"`},
		{"POST", s + "/usage", `{"model":"gpt-4o","Tokens_In":10}`, "unknown_field", `"Tokens_In"`},
		{"POST", s + "/messages", `{"messages":[{"role":"assistant","tool_calls":[{"ID":"c1","name":"f","arguments":{}}]}]}`, "invalid_field", `"messages[0].tool_calls[0]"`},
		{"PUT", "/v1/users/alice/blocks/human", `{"Content":"x"}`, "unknown_field", `"Content"`},
		{"POST", "/v1/locks/l1", `{"Owner":"me"}`, "unknown_field", `"Owner"`},
		{"POST", s + "/traces", `{"origin_function":"f","status":"success","method_params":{"a":` + deep + `}}`, "invalid_field", `"method_params.a`},
		{"POST", s + "/context", `{"id":"c1","v":` + deep + `}`, "invalid_field", `"v`},
		{"POST", s + "/context", `{"id":"c1","v":1e400}`, "invalid_field", `"v"`},
		{"POST", s + "/traces", `{"origin_function":"f","status":"success","method_params":{"x":-1e999}}`, "invalid_field", `"method_params.x"`},
		{"POST", s + "/messages", `{"messages":[{"role":"user","content":"hi","item":{"n":2e308}}]}`, "invalid_field", `"messages[0].item.n"`},
		{"POST", s + "/entries", `{"question":"\ud800","answer":"a"}`, "invalid_json", `"question"`},
		{"POST", s + "/entries", "{\"question\":\"q\",\"answer\":\"a\xff\"}", "invalid_json", `"answer"`},
		{"POST", s + "/context", `{"id":"c1","t":"\udfff"}`, "invalid_json", `"t"`},
		{"PATCH", s + "/state", "{\"k\":\"\xc3\"}", "invalid_json", `"k"`},
		{"POST", s + "/events", `{"event":"x-a","data":{"v":1e400}}`, "invalid_field", `"data.v"`},
	} {
		r := h.Do(t, tc.method, tc.path, tc.body)
		var env struct{ Error struct{ Message string } }
		_ = json.Unmarshal([]byte(r.Body), &env) // a 2xx body is no envelope
		if r.Status != http.StatusBadRequest || r.Code() != tc.code || !strings.Contains(env.Error.Message, tc.names) {
			t.Errorf("%s %s %.60s: %s, want 400 %s naming %s", tc.method, tc.path, tc.body, r, tc.code, tc.names)
		}
	}
	if n := srv.DBSize(t); n != 0 {
		t.Errorf("%d keys after refused writes, want none: %v", n, srv.Keys(t, "*"))
	}
}

// TestUnknownQueryParameters: every route of every module answers a query
// parameter it does not take (a misspelt ?lastn=3) 400 unknown_parameter
// listing those it takes, and writes nothing.
func TestUnknownQueryParameters(t *testing.T) {
	srv := redisstoretest.New(t)
	h := sidecartest.Start(t, srv, nil, modules.All()...)
	for _, rt := range moduleRoutes(t, srv.Conn(t)) {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		path = regexp.MustCompile(`\{[a-z_]+\}`).ReplaceAllString(path, "a")
		r := h.Do(t, method, path+"?lastn=3", `{}`)
		var env struct{ Error struct{ Message string } }
		_ = json.Unmarshal([]byte(r.Body), &env)
		listed := "this route takes none"
		if len(rt.Query) > 0 {
			listed = "accepted: " + strings.Join(rt.Query, ", ")
		}
		if r.Status != http.StatusBadRequest || r.Code() != "unknown_parameter" || !strings.Contains(env.Error.Message, listed) {
			t.Errorf("%s ?lastn=3: %s, want 400 unknown_parameter listing %v", rt.Pattern, r, rt.Query)
		}
	}
	if r := h.Do(t, "GET", "/v1/users/a/sessions?limit=1&metadata.team=x", ""); r.Status != http.StatusOK {
		t.Errorf("listUserSessions with a metadata filter: %s", r)
	}
	if n := srv.DBSize(t); n != 0 {
		t.Errorf("%d keys after refused calls, want none: %v", n, srv.Keys(t, "*"))
	}
}
