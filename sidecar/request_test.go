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
