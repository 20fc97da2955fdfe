package openapi_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/openapi"
	"github.com/agentsidecar/agentsidecar/openapi/openapitest"
)

// The route parity with the modules and the live checks are in cmd/sidecar
// (openapi_test.go), where the product's module list is.

func load(t *testing.T) *openapitest.Doc {
	t.Helper()
	if !json.Valid(openapi.JSON()) {
		t.Fatal("openapi.json is not valid JSON")
	}
	d, err := openapitest.Parse(openapi.JSON())
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return d
}

func TestDocument(t *testing.T) {
	d := load(t)
	if v, _ := d.Root["openapi"].(string); !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(v) {
		t.Errorf("openapi = %q, want 3.1.x", v)
	}
	info, _ := d.Root["info"].(map[string]any)
	if info["title"] == nil || info["version"] == nil {
		t.Errorf("info needs title and version: %v", info)
	}
	if license, _ := info["license"].(map[string]any); license["name"] == nil {
		t.Errorf("info needs a license with a name: %v", info["license"])
	}
	for _, ref := range d.Refs() {
		if _, err := d.Resolve(ref); err != nil {
			t.Errorf("unresolved: %v", err)
		}
	}
	// every component is used: a component nothing refers to documents
	// nothing (a $ref inside a component counts; security schemes are
	// named by the security requirements instead)
	components, _ := d.Root["components"].(map[string]any)
	for kind, m := range components {
		if kind == "securitySchemes" {
			continue
		}
		for name := range m.(map[string]any) {
			if ref := "#/components/" + kind + "/" + name; !slices.Contains(d.Refs(), ref) {
				t.Errorf("component %s is not used", ref)
			}
		}
	}
	ops := d.Operations()
	if len(ops) == 0 {
		t.Fatal("no operations")
	}
	idRe := regexp.MustCompile(`^[a-z][A-Za-z0-9]*$`)
	seen := map[string]string{}
	for _, o := range ops {
		if !idRe.MatchString(o.ID) {
			t.Errorf("%s: operationId %q: want lowerCamelCase, usable as a function name", o.Pattern(), o.ID)
		}
		if prev, dup := seen[o.ID]; dup {
			t.Errorf("operationId %q on both %s and %s", o.ID, prev, o.Pattern())
		}
		seen[o.ID] = o.Pattern()
		if !strings.HasPrefix(o.Path, "/v1/") {
			t.Errorf("%s: every path is under /v1/", o.Pattern())
		}
	}
}

// TestParameters: every {name} of a path is a required path parameter with
// the id pattern, and no parameter is declared twice or for nothing.
func TestParameters(t *testing.T) {
	d := load(t)
	idSchema, err := d.Resolve("#/components/schemas/Id")
	if err != nil {
		t.Fatal(err)
	}
	wantPattern := "^[A-Za-z0-9_.@-]{1,128}$"
	if p := idSchema.(map[string]any)["pattern"]; p != wantPattern {
		t.Errorf("Id pattern = %v, want %s", p, wantPattern)
	}
	wild := regexp.MustCompile(`\{([^}]+)\}`)
	for _, o := range d.Operations() {
		params, err := d.Parameters(o)
		if err != nil {
			t.Fatalf("%s: %v", o.Pattern(), err)
		}
		var inPath []string
		for _, m := range wild.FindAllStringSubmatch(o.Path, -1) {
			inPath = append(inPath, m[1])
		}
		var declared []string
		for _, p := range params {
			name, _ := p["name"].(string)
			if p["in"] != "path" {
				if p["in"] != "query" && p["in"] != "header" {
					t.Errorf("%s: parameter %s in %v", o.Pattern(), name, p["in"])
				}
				continue
			}
			declared = append(declared, name)
			if p["required"] != true {
				t.Errorf("%s: path parameter %s must be required", o.Pattern(), name)
			}
			s, err := d.Deref(p["schema"])
			if err != nil || s["pattern"] != wantPattern {
				t.Errorf("%s: path parameter %s must have the id pattern (%v)", o.Pattern(), name, err)
			}
		}
		slices.Sort(inPath)
		slices.Sort(declared)
		if !slices.Equal(inPath, declared) {
			t.Errorf("%s: path wildcards %v, declared path parameters %v", o.Pattern(), inPath, declared)
		}
	}
}

// TestResponses: the shared error behaviour is on every operation, every
// error answer is the envelope (or, on the MCP route, a JSON-RPC error),
// and its example codes are the ones named.
func TestResponses(t *testing.T) {
	d := load(t)
	errorSchema := "#/components/schemas/Error"
	// the MCP route's 400: the envelope, or a JSON-RPC error for a body
	// that is no JSON-RPC request
	mcpErrors := map[string]any{"oneOf": []any{map[string]any{"$ref": errorSchema}, map[string]any{"$ref": "#/components/schemas/McpError"}}}
	for _, o := range d.Operations() {
		resps, _ := o.Op["responses"].(map[string]any)
		want := []string{"401", "500", "503"}
		if o.Op["requestBody"] != nil {
			want = append(want, "413", "415")
		}
		for _, code := range want {
			if resps[code] == nil {
				t.Errorf("%s: no %s response", o.ID, code)
			}
		}
		success := 0
		for code, r := range resps {
			status, err := strconv.Atoi(code)
			if err != nil {
				t.Errorf("%s: response key %q: want a status code", o.ID, code)
				continue
			}
			rm, err := d.Deref(r)
			if err != nil {
				t.Errorf("%s %s: %v", o.ID, code, err)
				continue
			}
			media := openapitest.JSONMedia(rm)
			if status < 400 {
				success++
				if status == 204 && rm["content"] != nil {
					t.Errorf("%s: 204 with content", o.ID)
				}
				// 204, and the 202 of an MCP notification, have no body
				if status != 204 && !(status == 202 && rm["content"] == nil) && media == nil && openapitest.EventStreamMedia(rm) == nil {
					t.Errorf("%s %s: no application/json content", o.ID, code)
				}
				continue
			}
			if media == nil {
				t.Errorf("%s %s: no application/json content", o.ID, code)
				continue
			}
			if s, _ := media["schema"].(map[string]any); s["$ref"] != errorSchema && !reflect.DeepEqual(s, mcpErrors) {
				t.Errorf("%s %s: schema %v, want %s", o.ID, code, s, errorSchema)
			}
			examples, _ := media["examples"].(map[string]any)
			if len(examples) == 0 {
				t.Errorf("%s %s: no example per error code", o.ID, code)
			}
			for name, ex := range examples {
				value := ex.(map[string]any)["value"].(map[string]any)
				v := value["error"].(map[string]any)
				if value["jsonrpc"] != nil { // the MCP route's JSON-RPC errors: named after their code
					if _, ok := v["code"].(json.Number); !ok {
						t.Errorf("%s %s: JSON-RPC example %q has code %v", o.ID, code, name, v["code"])
					}
					if desc, _ := rm["description"].(string); !strings.Contains(desc, "`"+name+"`: "+v["code"].(json.Number).String()) {
						t.Errorf("%s %s: description does not name the JSON-RPC error %s (%v)", o.ID, code, name, v["code"])
					}
					continue
				}
				if v["code"] != name {
					t.Errorf("%s %s: example %q has code %v", o.ID, code, name, v["code"])
				}
				if desc, _ := rm["description"].(string); !strings.Contains(desc, "`"+name+"`") {
					t.Errorf("%s %s: description does not name the code %s", o.ID, code, name)
				}
			}
		}
		if success == 0 {
			t.Errorf("%s: no success response", o.ID)
		}
	}
	rs, err := d.Resolve("#/components/responses/RedisUnavailable")
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := rs.(map[string]any)["headers"].(map[string]any); h["Retry-After"] == nil {
		t.Error("503 must document Retry-After")
	}
}

// TestExamples: every example in the document is valid for its schema.
func TestExamples(t *testing.T) {
	d := load(t)
	check := func(where string, media map[string]any) {
		t.Helper()
		if media == nil {
			return
		}
		if ex, ok := media["example"]; ok {
			if err := d.Validate(media["schema"], ex); err != nil {
				t.Errorf("%s: example: %v", where, err)
			}
		}
		examples, _ := media["examples"].(map[string]any)
		for name, e := range examples {
			ex, err := d.Deref(e)
			if err != nil {
				t.Errorf("%s: example %s: %v", where, name, err)
				continue
			}
			if err := d.Validate(media["schema"], ex["value"]); err != nil {
				t.Errorf("%s: example %s: %v", where, name, err)
			}
		}
	}
	for _, o := range d.Operations() {
		if body, ok := o.Op["requestBody"].(map[string]any); ok {
			if openapitest.JSONMedia(body)["example"] == nil {
				t.Errorf("%s: request body without an example", o.ID)
			}
			check(o.ID+" request", openapitest.JSONMedia(body))
		}
		for code, r := range o.Op["responses"].(map[string]any) {
			rm, err := d.Deref(r)
			if err != nil {
				t.Fatal(err)
			}
			check(o.ID+" "+code, openapitest.JSONMedia(rm))
		}
		params, err := d.Parameters(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range params {
			ex, ok := p["example"]
			if !ok {
				if p["required"] == true {
					t.Errorf("%s: required parameter %v has no example", o.ID, p["name"])
				}
				continue
			}
			if err := d.Validate(p["schema"], ex); err != nil {
				t.Errorf("%s: parameter %v example: %v", o.ID, p["name"], err)
			}
		}
	}
	schemas := d.Root["components"].(map[string]any)["schemas"].(map[string]any)
	for name, s := range schemas {
		if ex, ok := s.(map[string]any)["example"]; ok {
			if err := d.Validate(s, ex); err != nil {
				t.Errorf("schema %s: example: %v", name, err)
			}
		}
	}
}

// TestValidatorRejects: the validator used against the live server is not
// a yes-machine.
func TestValidatorRejects(t *testing.T) {
	d := load(t)
	cases := []struct{ schema, body string }{
		{"SessionQAEntry", `{"time":"t","qa_id":"q","question":"x","context":"","answer":1}`},
		{"SessionQAEntry", `{"time":"t","qa_id":"q","question":"x","context":""}`},
		{"SessionQAEntry", `{"time":"t","qa_id":"q","question":"x","context":"","answer":"a","feedback_score":6}`},
		{"AppendEntryRequest", `{"question":"x","answer":"a","nope":1}`},
		{"AppendEntryRequest", `{"question":"x","answer":"a","qa_id":"a:b"}`},
		{"UpdateEntryRequest", `{}`},
		{"UpdateContextRequest", `{"id":"x"}`},
		{"MemifyMetadata", `{"a":"yes"}`},
		{"Error", `{"error":{"code":"not_found"}}`},
		{"LockReleased", `{"released":false}`},
		{"SessionList", `{"sessions":[]}`},
		{"UsageResult", `{"model":"m","priced_as":null,"tokens_in":1.5,"tokens_out":0,"tokens_estimated":false,"cost_usd":0,"cost_source":"price_table","error":false}`},
	}
	for _, c := range cases {
		if err := d.ValidateJSON(map[string]any{"$ref": "#/components/schemas/" + c.schema}, []byte(c.body)); err == nil {
			t.Errorf("%s accepted %s", c.schema, c.body)
		}
	}
}

// A write's memify_metadata takes booleans only, as the server does (a
// detail object is 400); a read may show objects Cognee wrote.
func TestMemifyMetadata(t *testing.T) {
	d := load(t)
	write, err := d.Resolve("#/components/schemas/MemifyMetadata")
	if err != nil {
		t.Fatal(err)
	}
	read, err := d.Resolve("#/components/schemas/StoredMemifyMetadata")
	if err != nil {
		t.Fatal(err)
	}
	detail := map[string]any{"a": true, "b": map[string]any{"weight": json.Number("1")}}
	if err := d.Validate(write, detail); err == nil {
		t.Error("MemifyMetadata takes an object value, which the server refuses")
	}
	if err := d.Validate(write, map[string]any{"a": true, "b": false}); err != nil {
		t.Errorf("MemifyMetadata refuses booleans: %v", err)
	}
	if err := d.Validate(read, detail); err != nil {
		t.Errorf("StoredMemifyMetadata refuses Cognee's detail objects: %v", err)
	}
}
