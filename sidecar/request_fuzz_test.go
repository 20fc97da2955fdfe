package sidecar_test

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Whatever the body, strict decoding either succeeds or answers a client
// error (4xx) with a code: never a panic, never a 5xx.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"value":"x"}`, `{"value":5}`, `{"vaule":"x"}`, `{`, `[]`, ``, `{"value":"x"} {}`, "\xff", `{"value":"\ud800"}`, `{"value":"x","ttl_seconds":1e400}`, `{"Value":"x"}`, `{"value":"x","ttl_seconds":1e99}`, `{"value":"x","value":"y"}`, `{"value":"\u0076","ttl_seconds":1,"ttl_s\u0065conds":2}`} {
		f.Add(s, "application/json")
	}
	f.Add(`{"value":"x"}`, "text/plain")
	f.Fuzz(func(t *testing.T, body, contentType string) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		var v struct {
			Value string `json:"value"`
			TTL   int    `json:"ttl_seconds"`
		}
		err := sidecar.DecodeJSON(r, &v)
		if err == nil {
			if !json.Valid([]byte(body)) {
				t.Fatalf("accepted invalid JSON %q", body)
			}
			if hasDuplicateKey(body) {
				t.Fatalf("accepted a repeated key in %q", body)
			}
			if !utf8.ValidString(body) {
				t.Fatalf("accepted text that is not UTF-8 in %q", body)
			}
			return
		}
		var apiErr *sidecar.Error
		if !errors.As(err, &apiErr) || apiErr.Status < 400 || apiErr.Status > 499 || apiErr.Code == "" {
			t.Fatalf("DecodeJSON(%q, %q) = %v, want a 4xx *sidecar.Error", body, contentType, err)
		}
	})
}

// ValidID accepts exactly 1-128 characters of [A-Za-z0-9_.@-].
func FuzzValidID(f *testing.F) {
	for _, s := range []string{"default_session", "a:b", "{x}", "", strings.Repeat("a", 129), "é", ".", "..", "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := len(s) >= 1 && len(s) <= 128 && s != "." && s != ".." &&
			strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.@-") == ""
		if got := sidecar.ValidID(s); got != want {
			t.Fatalf("ValidID(%q) = %v, want %v", s, got, want)
		}
	})
}
