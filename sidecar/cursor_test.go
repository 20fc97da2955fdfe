package sidecar_test

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// A cursor gives back the fields it was made of, is URL-safe text, and
// anything else (another version, another field count, cut, padded, not
// base64url) is the one 400 invalid_cursor.
func TestCursor(t *testing.T) {
	for _, fields := range [][]string{{"1700000000", "alice:s1"}, {"", ""}, {"12", "0"}, {strings.Repeat("é", 300), ":\x00\n"}} {
		c := sidecar.EncodeCursor(fields...)
		if strings.ContainsAny(c, "+/=%?&") {
			t.Errorf("cursor %q is not URL-safe", c)
		}
		got, err := sidecar.DecodeCursor(c, len(fields))
		if err != nil || !slices.Equal(got, fields) {
			t.Errorf("DecodeCursor(EncodeCursor(%q)) = %q, %v", fields, got, err)
		}
	}
	good := sidecar.EncodeCursor("5", "3")
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	v2 := append([]byte{2}, raw[1:]...)
	for name, c := range map[string]string{
		"empty":            "",
		"not base64url":    "a+b/",
		"padded":           good + "=",
		"plain text":       "5:3",
		"old listing form": base64.RawURLEncoding.EncodeToString([]byte("1700000000:alice")),
		"another version":  base64.RawURLEncoding.EncodeToString(v2),
		"cut":              base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1]),
		"a field more":     sidecar.EncodeCursor("5", "3", "1"),
		"a field less":     sidecar.EncodeCursor("5"),
		"trailing byte":    base64.RawURLEncoding.EncodeToString(append(raw, 0)),
		"too long":         sidecar.EncodeCursor("5", strings.Repeat("x", 4096)),
	} {
		_, err := sidecar.DecodeCursor(c, 2)
		var e *sidecar.Error
		if !errors.As(err, &e) || e.Status != 400 || e.Code != "invalid_cursor" {
			t.Errorf("%s: DecodeCursor(%q) = %v, want 400 invalid_cursor", name, c, err)
		}
	}
}

// Whatever the text, DecodeCursor answers fields or invalid_cursor, never
// a panic; what it accepts encodes back to the same cursor.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(sidecar.EncodeCursor("1700000000", "alice:s1"), 2)
	f.Add(sidecar.EncodeCursor("5", "3"), 2)
	f.Add("AQ", 0)
	f.Add("5:3", 2)
	f.Fuzz(func(t *testing.T, c string, n int) {
		n = min(max(n, 0), 8)
		fields, err := sidecar.DecodeCursor(c, n)
		if err != nil {
			var e *sidecar.Error
			if !errors.As(err, &e) || e.Code != "invalid_cursor" {
				t.Fatalf("DecodeCursor(%q, %d): %v", c, n, err)
			}
			return
		}
		if len(fields) != n || sidecar.EncodeCursor(fields...) != c {
			t.Fatalf("DecodeCursor(%q, %d) = %q, which encodes to %q", c, n, fields, sidecar.EncodeCursor(fields...))
		}
	})
}
