package cognee

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as Python's json.dumps (ensure_ascii=True) writes a
// string: '"' and '\' escaped, \n \r \t \b \f by name, every other byte
// outside ' '..'~' as \uXXXX in lower-case hex (astral characters as a
// surrogate pair). '/' is not escaped.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = appendU(b, rune(c))
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r > 0xffff {
			r -= 0x10000
			b = appendU(b, 0xd800+(r>>10))
			b = appendU(b, 0xdc00+(r&0x3ff))
		} else {
			b = appendU(b, r) // invalid UTF-8 decodes to U+FFFD, as Python's surrogateescape-free decode would refuse
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendU(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// Transcode rewrites any valid JSON value in json.dumps's layout (", " and
// ": " separators, ASCII-only strings), keeping object key order and number
// literals exactly as given. The input must already be strict JSON.
func Transcode(raw []byte) ([]byte, error) {
	return AppendTranscoded(nil, raw)
}

// AppendTranscoded is Transcode appending to b.
func AppendTranscoded(b []byte, raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	// Each open container: its kind and how many tokens it has seen.
	type frame struct {
		object bool
		n      int
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			b = append(b, byte(d))
			continue
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			switch {
			case top.object && top.n%2 == 1:
				b = append(b, ':', ' ')
			case top.n > 0:
				b = append(b, ',', ' ')
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			stack = append(stack, frame{object: v == '{'})
			b = append(b, byte(v))
		case string:
			b = AppendString(b, v)
		case json.Number:
			b = append(b, v...)
		case bool:
			b = strconv.AppendBool(b, v)
		case nil:
			b = append(b, "null"...)
		}
	}
	return b, nil
}

// ErrNotJSON is returned for stored bytes that are not a JSON value even
// after Python's NaN and Infinity are mapped.
var ErrNotJSON = errors.New("stored value is not JSON")

// Strict returns stored bytes as strict JSON for API clients: Python's
// json.dumps writes the bare tokens NaN, Infinity and -Infinity for floats
// no JSON parser accepts; they become null. Bytes that need no change are
// returned as they are (no copy).
func Strict(stored []byte) ([]byte, error) {
	if !hasNonFinite(stored) {
		if !json.Valid(stored) {
			return nil, ErrNotJSON
		}
		return stored, nil
	}
	out := make([]byte, 0, len(stored))
	for i := 0; i < len(stored); {
		c := stored[i]
		if c == '"' {
			j := endOfString(stored, i)
			out = append(out, stored[i:j]...)
			i = j
			continue
		}
		if tok := nonFiniteAt(stored, i); tok > 0 {
			out = append(out, "null"...)
			i += tok
			continue
		}
		out = append(out, c)
		i++
	}
	if !json.Valid(out) {
		return nil, ErrNotJSON
	}
	return out, nil
}

func hasNonFinite(b []byte) bool {
	return bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Infinity"))
}

// endOfString returns the index just past the string starting at b[i].
func endOfString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// nonFiniteAt returns the length of a NaN/Infinity/-Infinity token at b[i].
func nonFiniteAt(b []byte, i int) int {
	for _, tok := range []string{"NaN", "Infinity", "-Infinity"} {
		if bytes.HasPrefix(b[i:], []byte(tok)) {
			return len(tok)
		}
	}
	return 0
}

// AppendStrictArray appends the stored elements as one strict JSON array,
// skipping (and counting) elements that are not JSON.
func AppendStrictArray(b []byte, elems []string) (_ []byte, skipped int) {
	b = append(b, '[')
	first := true
	for _, e := range elems {
		s, err := Strict([]byte(e))
		if err != nil {
			skipped++
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, s...)
	}
	return append(b, ']'), skipped
}

// describe names a JSON value's type for error messages.
func describe(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return fmt.Sprintf("the number %s", raw)
	}
}
