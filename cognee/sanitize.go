package cognee

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Cognee's limits on what a trace step stores (its sanitization module):
// strings are cut to MaxTraceText characters, lists and objects to their
// first MaxTraceItems items, at every depth.
const (
	MaxTraceText  = 1000
	MaxTraceItems = 20
)

// TruncateText cuts s to limit characters (Python str characters: code
// points) as Cognee's truncate_text does: a longer string keeps its first
// limit-3 characters followed by "...", so the result is exactly limit long.
func TruncateText(s string, limit int) string {
	if len(s) <= limit || utf8.RuneCountInString(s) <= limit {
		return s
	}
	n := 0
	for i := range s {
		if n == limit-3 {
			return s[:i] + "..."
		}
		n++
	}
	return s
}

// pyStrip is Python's str.strip(): it also strips the separators
// U+001C..U+001F, which Go's unicode.IsSpace does not count.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
}

// traceText is a trace step's text field as Cognee's validators store it:
// stripped, then cut to MaxTraceText.
func traceText(s string) string { return TruncateText(pyStrip(s), MaxTraceText) }

// SanitizeValue encodes raw (strict JSON) as json.dumps would after Cognee's
// sanitize_value: strings cut to MaxTraceText, lists and objects to their
// first MaxTraceItems items (objects in their order), recursively; object
// keys cut to MaxTraceText, a key that then equals an earlier one getting
// the first free "_2", "_3", ... suffix; booleans and null as they are;
// numbers as json.dumps writes what json.loads made of them
// (appendPythonNumber), so the bytes are the ones Cognee would store.
func SanitizeValue(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	b, err := appendSanitized(nil, dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return b, nil
}

func appendSanitized(b []byte, dec *json.Decoder) ([]byte, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			b = append(b, '[')
			for n := 0; dec.More(); n++ {
				if n >= MaxTraceItems {
					if err := skip(dec); err != nil {
						return nil, err
					}
					continue
				}
				if n > 0 {
					b = append(b, ',', ' ')
				}
				if b, err = appendSanitized(b, dec); err != nil {
					return nil, err
				}
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return append(b, ']'), nil
		}
		return appendSanitizedObject(b, dec)
	case string:
		return AppendString(b, TruncateText(v, MaxTraceText)), nil
	case json.Number:
		return appendPythonNumber(b, string(v)), nil
	case bool:
		if v {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	default:
		return append(b, "null"...), nil
	}
}

func appendSanitizedObject(b []byte, dec *json.Decoder) ([]byte, error) {
	var names []string
	var vals [][]byte
	for n := 0; dec.More(); n++ {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if n >= MaxTraceItems {
			if err := skip(dec); err != nil {
				return nil, err
			}
			continue
		}
		v, err := appendSanitized(nil, dec)
		if err != nil {
			return nil, err
		}
		names = append(names, TruncateText(tok.(string), MaxTraceText))
		vals = append(vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	names = uniqueKeys(names)
	b = append(b, '{')
	for i, name := range names {
		b = appendKey(b, i == 0, name)
		b = append(b, vals[i]...)
	}
	return append(b, '}'), nil
}

// uniqueKeys makes names unique in order: a name equal to an earlier one
// gets the first "_2", "_3", ... suffix that is neither taken nor any
// other key's own name (Cognee's unique_string_keys, every key a string).
func uniqueKeys(names []string) []string {
	reserved := make(map[string]bool, len(names))
	for _, n := range names {
		reserved[n] = true
	}
	if len(reserved) == len(names) {
		return names
	}
	taken := make(map[string]bool, len(names))
	out := make([]string, len(names))
	for i, name := range names {
		c := name
		for s := 2; taken[c] || (c != name && reserved[c]); s++ {
			c = fmt.Sprintf("%s_%d", name, s)
		}
		taken[c] = true
		out[i] = c
	}
	return out
}

func skip(dec *json.Decoder) error {
	var raw json.RawMessage
	return dec.Decode(&raw)
}

// appendPythonNumber appends the JSON number literal lit as json.dumps
// writes the value json.loads reads from it: an integer as Python's int
// (exact, "-0" is 0); any other number as Python's float repr (the
// shortest digits that round-trip; fixed notation with at least one
// decimal for exponents -4..15, else d.ddde±XX), and one too large for a
// float as Infinity or -Infinity, as Cognee's Redis adapter stores it.
func appendPythonNumber(b []byte, lit string) []byte {
	if !strings.ContainsAny(lit, ".eE") {
		if lit == "-0" {
			return append(b, '0')
		}
		return append(b, lit...)
	}
	f, err := strconv.ParseFloat(lit, 64)
	switch {
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case err != nil:
		return append(b, lit...)
	case f == 0:
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return append(b, e...)
	}
	fixed := strconv.FormatFloat(f, 'f', -1, 64)
	b = append(b, fixed...)
	if !strings.Contains(fixed, ".") {
		b = append(b, '.', '0')
	}
	return b
}
