package sidecar_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

type inner struct {
	A string `json:"a"`
}

type withEmbedded struct {
	ID string `json:"id,omitempty"`
	inner
	When   time.Time       `json:"when"` // a struct that decodes itself: a leaf
	Raw    json.RawMessage `json:"raw"`
	Hidden string          `json:"-"`
}

type withNested struct {
	ID    string `json:"id"`
	Inner inner  `json:"inner"`
}

// An unknown field's answer lists the accepted fields, unless the body holds
// a nested object, whose unknown field the top-level list would not cover.
func TestUnknownFieldListsAcceptedFields(t *testing.T) {
	tests := []struct {
		name string
		body string
		v    any
		want string
	}{
		{"embedded fields in place", `{"b":1}`, &withEmbedded{}, `unknown field "b"; accepted fields: id, a, when, raw`},
		{"nested object: no list", `{"inner":{"b":1}}`, &withNested{}, `unknown field "b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := sidecar.DecodeJSONBytes([]byte(tc.body), tc.v)
			e, ok := err.(*sidecar.Error)
			if !ok || e.Code != "unknown_field" || e.Message != tc.want {
				t.Fatalf("got %v, want unknown_field: %s", err, tc.want)
			}
		})
	}
}
