package sidecar_test

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// A key repeated in one object, at any depth and however it is escaped, is
// a 400 naming it; equal keys in different objects are fine.
func TestDecodeJSONRefusesDuplicateKeys(t *testing.T) {
	many := `{`
	for i := range 40 {
		many += `"k` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1,`
	}
	for _, tc := range []struct{ body, field string }{
		{`{"x":"a","x":"b"}`, "x"},
		{`{"memify_metadata":{"k":true,"k":false}}`, "memify_metadata.k"},
		{`{"a":[{"b":1},{"c":{"d":1,"d":2}}]}`, "a.c.d"},
		{`{"x":1,"\u0078":2}`, "x"},
		{`{"a":{"x":1},"b":"{\"a\":1,\"a\":2}","a":3}`, "a"},
		{many + `"kaa":2}`, "kaa"},
		{`{"":[],"":0.00}`, ""}, // an empty key: its path is "" too
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
		var v any
		err := sidecar.DecodeJSON(r, &v)
		var apiErr *sidecar.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "duplicate_field" || !strings.Contains(apiErr.Message, `"`+tc.field+`"`) {
			t.Errorf("%s: %v, want 400 duplicate_field naming %q", tc.body, err, tc.field)
		}
	}
	for _, ok := range []string{`{"a":{"x":1},"b":{"x":1},"x":[{"x":1},{"x":2}]}`, `{"s":"\"a\":1,\"a\":2"}`, many + `"z":1}`} {
		var v any
		if err := sidecar.DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(ok)), &v); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// hasDuplicateKey is the reference for the fuzzer: a token walk.
func hasDuplicateKey(body string) bool {
	dec := json.NewDecoder(strings.NewReader(body))
	type frame struct {
		object bool
		n      int
		keys   map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				if len(stack) > 0 {
					stack[len(stack)-1].n++
				}
				stack = append(stack, &frame{object: d == '{', keys: map[string]bool{}})
			} else {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if len(stack) == 0 {
			continue
		}
		top := stack[len(stack)-1]
		if top.object && top.n%2 == 0 {
			k := tok.(string)
			if top.keys[k] {
				return true
			}
			top.keys[k] = true
		}
		top.n++
	}
}

// Every body passes one strictness, whatever the route: names spelled
// exactly (at any depth where a struct is decoded), valid UTF-8 without
// lone surrogates, at most sidecar.MaxDepth levels, numbers a float64
// holds. Each refusal is a 400 naming the field.
func TestDecodeJSONStrictness(t *testing.T) {
	type inner struct {
		ID   string          `json:"id"`
		Args json.RawMessage `json:"args"`
	}
	type body struct {
		Question string          `json:"question"`
		TokensIn int             `json:"tokens_in"`
		Calls    []inner         `json:"calls"`
		Meta     map[string]any  `json:"meta"`
		Raw      json.RawMessage `json:"raw"`
	}
	deep := strings.Repeat(`[`, sidecar.MaxDepth) + strings.Repeat(`]`, sidecar.MaxDepth)
	for _, tc := range []struct{ body, code, field string }{
		{`{"question":"q","Question":"r"}`, "unknown_field", `"Question"`},
		{`{"QUESTION":"q"}`, "unknown_field", `"QUESTION"`},
		{`{"Tokens_In":10}`, "unknown_field", `"Tokens_In"`},
		{`{"calls":[{"id":"a"},{"ID":"b"}]}`, "unknown_field", `"calls[1].ID"`},
		{`{"raw":{"x":` + deep + `}}`, "invalid_field", `"raw.x`},
		{`{"meta":{"a":1e400}}`, "invalid_field", `"meta.a"`},
		{`{"raw":[1,-2E+309]}`, "invalid_field", `"raw[1]"`},
		{`{"calls":[{"id":"a","args":{"n":1` + strings.Repeat("0", 400) + `}}]}`, "invalid_field", `"calls[0].args.n"`},
		{`{"question":"\ud800"}`, "invalid_json", `"question"`},
		{`{"question":"a\udc00b"}`, "invalid_json", `"question"`},
		{`{"question":"\ud800\u0041"}`, "invalid_json", `"question"`},
		{"{\"question\":\"a\xffb\"}", "invalid_json", `"question"`},
		{"{\"meta\":{\"k\xc3\":1}}", "invalid_json", `"meta"`},
		{"\"\xed\xa0\x80\"", "invalid_json", "the request body"},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
		var v body
		err := sidecar.DecodeJSON(r, &v)
		var apiErr *sidecar.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != tc.code || !strings.Contains(apiErr.Message, tc.field) {
			t.Errorf("%.80s: %v, want 400 %s naming %s", tc.body, err, tc.code, tc.field)
		}
	}
	for _, ok := range []string{
		`{"question":"😀 \ud83d\ude00 é","meta":{"Question":1,"QUESTION":2,"n":1e308,"m":-1.5e-400},"raw":{"ID":[` + deep[3:len(deep)-3] + `]}}`,
		`{"calls":[{"id":"a","args":{"ID":1}}],"meta":{"big":123456789012345678901234567890}}`,
	} {
		var v body
		if err := sidecar.DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(ok)), &v); err != nil {
			t.Errorf("%.80s: %v", ok, err)
		}
	}
}

// The quick path takes only what the full decoder takes: a body it would
// refuse goes to the full decoder, which gives the error.
func TestObjectFieldsStrictness(t *testing.T) {
	for _, b := range []string{`{"q":"\ud800"}`, "{\"q\":\"\xff\"}", `{"q":1e999}`, `{"q":[1,2e400]}`} {
		if sidecar.ObjectFields([]byte(b), func(_, _ []byte) bool { return true }) {
			t.Errorf("ObjectFields(%s) took it", b)
		}
	}
	if !sidecar.ObjectFields([]byte(`{"q":"\ud83d\ude00","n":1e300}`), func(_, _ []byte) bool { return true }) {
		t.Error("ObjectFields refused a valid pair and a finite number")
	}
}

// A body of the wrong JSON type is named in plain words.
func TestDecodeJSONWrongBodyType(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	err := sidecar.DecodeJSON(httptest.NewRequest("POST", "/", strings.NewReader(`[1]`)), &v)
	if err == nil || !strings.Contains(err.Error(), "request body must be an object, not array") {
		t.Errorf("got %v, want the body named an object", err)
	}
}

// DecodeJSONBytesLax takes lone surrogate escapes inside the members its
// function accepts (kept as the raw bytes), and only there: elsewhere, and
// invalid UTF-8 bytes anywhere, are the same 400 naming the member.
func TestDecodeJSONLax(t *testing.T) {
	type body struct {
		Item     json.RawMessage   `json:"item"`
		Text     string            `json:"text"`
		Messages []json.RawMessage `json:"messages"`
	}
	var seen []string
	lax := func(path string) bool {
		seen = append(seen, path)
		return path == "item" || strings.HasPrefix(path, "item.") || strings.HasPrefix(path, "item[")
	}
	ok := `{"text":"t","item":{"a":"cut \ud83d","b":["\udc00",{"c\ud800":"\ud800\ud800"}]}}`
	var v body
	if err := sidecar.DecodeJSONBytesLax([]byte(ok), &v, lax); err != nil {
		t.Fatalf("%s: %v", ok, err)
	}
	if want := `{"a":"cut \ud83d","b":["\udc00",{"c\ud800":"\ud800\ud800"}]}`; string(v.Item) != want {
		t.Fatalf("item kept as %s, want %s", v.Item, want)
	}
	if strings.Join(seen, " ") != "item.a item.b[0] item.b[1] item.b[1].c\ufffd" {
		t.Errorf("paths asked: %q", seen)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"text":"\ud800","item":{"a":"\ud800"}}`, `"text"`},
		{`{"item":{"a":"\ud800"},"messages":[{"x":"\udc00"}]}`, `"messages[0].x"`},
		{"{\"item\":{\"a\":\"\xff\"}}", `"item.a"`},
		{`{"item\ud800":1}`, "the request body"},
	} {
		var v body
		err := sidecar.DecodeJSONBytesLax([]byte(tc.body), &v, lax)
		var apiErr *sidecar.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != "invalid_json" || !strings.Contains(apiErr.Message, tc.field) {
			t.Errorf("%s: %v, want 400 invalid_json naming %s", tc.body, err, tc.field)
		}
	}
	if err := sidecar.DecodeJSONBytes([]byte(ok), &v); err == nil {
		t.Error("DecodeJSONBytes took a lone surrogate escape")
	}
}
