package sidecar

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects a request body may
// hold, so every value the sidecar stores (a trace, a context entry, a
// message's item, a block, state, an event's data) nests at most this deep
// with the few levels the sidecar wraps around it: well under the 1 000
// frames of Python's json.loads (what Cognee reads with) and the 1 000 of
// Redis's cjson.
const MaxDepth = 512

// checkText is the strictness every request body passes, shared by every
// module (DecodeJSONBytes, and ObjectFields' quick path): body, valid JSON,
// must hold only valid UTF-8 and no lone surrogate escape ("\ud800"), as
// Go's decoder would silently turn either into U+FFFD; nest at most
// MaxDepth levels; and hold only numbers a float64 can hold (1e400 is
// Infinity to Python and an error to Go's decoder). It allocates nothing
// unless it refuses.
func checkText(body []byte) error {
	depth := 0
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '{' || c == '[':
			if depth++; depth > MaxDepth {
				return BadRequest("invalid_field", "%s nests deeper than %d levels of arrays and objects", fieldAt(body, i), MaxDepth)
			}
		case c == '}' || c == ']':
			depth--
		case c == '"':
			end, bad := stringEnd(body, i)
			if bad >= 0 {
				return BadRequest("invalid_json", "%s holds text that is not valid UTF-8 (invalid bytes or a lone surrogate \\u escape) at byte %d; send UTF-8 text", fieldAt(body, i), bad)
			}
			i = end - 1
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			exp := false
			for j < len(body) && (body[j] == '.' || body[j] == 'e' || body[j] == 'E' || body[j] == '+' || body[j] == '-' || (body[j] >= '0' && body[j] <= '9')) {
				exp = exp || body[j] == 'e' || body[j] == 'E'
				j++
			}
			// without an exponent, fewer than 309 digits are always finite
			if exp || j-i > 300 {
				if _, err := strconv.ParseFloat(string(body[i:j]), 64); err != nil {
					return BadRequest("invalid_field", "%s holds the number %.40s, outside what a 64-bit float holds (about ±1.8e308)", fieldAt(body, i), body[i:j])
				}
			}
			i = j - 1
		}
	}
	return nil
}

// stringEnd returns the index just past the JSON string opening at b[i]
// (valid JSON), and the offset of its first invalid UTF-8 byte or lone
// surrogate escape, -1 when it has none.
func stringEnd(b []byte, i int) (end, bad int) {
	bad = -1
	for i++; b[i] != '"'; i++ {
		switch c := b[i]; {
		case c == '\\':
			i++
			if b[i] != 'u' || bad >= 0 {
				continue
			}
			r := hex4(b[i+1 : i+5])
			switch {
			case r >= 0xdc00 && r <= 0xdfff:
				bad = i - 1
			case r >= 0xd800 && r <= 0xdbff:
				if i+10 < len(b) && b[i+5] == '\\' && b[i+6] == 'u' {
					if lo := hex4(b[i+7 : i+11]); lo >= 0xdc00 && lo <= 0xdfff {
						i += 10
						continue
					}
				}
				bad = i - 1
			}
			i += 4
		case c >= 0x80:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 && bad < 0 {
				bad = i
			}
			i += n - 1
		}
	}
	return i + 1, bad
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		default:
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}

// fieldAt names, for an error, the member of body that holds byte at:
// `field "a.b[2].c"`, or "the request body" for a value outside any
// object. Long paths keep their first components.
func fieldAt(body []byte, at int) string {
	type frame struct {
		object bool
		key    string
		index  int
	}
	var stack []frame
	expectKey := false
	for i := 0; i < at && i < len(body); i++ {
		switch body[i] {
		case '{', '[':
			stack = append(stack, frame{object: body[i] == '{'})
			expectKey = body[i] == '{'
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			top := &stack[len(stack)-1]
			top.index++
			expectKey = top.object
		case '"':
			end, _ := stringEnd(body, i)
			if expectKey {
				var key string
				if json.Unmarshal(body[i:end], &key) != nil {
					key = string(body[i+1 : end-1])
				}
				stack[len(stack)-1].key = key
				expectKey = false
			}
			i = end - 1
		}
	}
	if expectKey && len(stack) > 0 { // at a key: name its object
		stack[len(stack)-1].key = ""
	}
	var b strings.Builder
	for n, f := range stack {
		if b.Len() > 120 {
			b.WriteString("…")
			break
		}
		if f.object {
			if f.key == "" {
				break
			}
			if n > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		} else if n > 0 || b.Len() > 0 {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	if b.Len() == 0 {
		return "the request body"
	}
	return "field " + strconv.Quote(b.String())
}

// exactNames checks that every member name body gives a struct field (at
// any depth, where v's type says a struct is decoded) is spelled exactly as
// the field's JSON name: Go's decoder also takes "Question" or "QUESTION"
// for "question", which another reader of the stored JSON would not.
func exactNames(body []byte, v any) error {
	t := reflect.TypeOf(v)
	if !wantsNames(t) {
		return nil
	}
	_, err := walkNames(body, skipSpace(body, 0), t, "")
	return err
}

// wantsNames reports whether a value of type t may decode a struct.
func wantsNames(t reflect.Type) bool {
	for t != nil {
		if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
			return false
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			return true
		default:
			return false
		}
	}
	return false
}

// walkNames walks the JSON value at body[i] (valid JSON) as decoded into t
// and returns the index past it.
func walkNames(body []byte, i int, t reflect.Type, path string) (int, error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !wantsNames(t) {
		return skipValue(body, i), nil
	}
	switch body[i] {
	case '{':
		var fields map[string]reflect.Type
		if t.Kind() == reflect.Struct {
			fields = structNames(t)
		} else if t.Kind() != reflect.Map {
			return skipValue(body, i), nil
		}
		i = skipSpace(body, i+1)
		for body[i] != '}' {
			end, _ := stringEnd(body, i)
			key := string(body[i+1 : end-1])
			if strings.IndexByte(key, '\\') >= 0 {
				_ = json.Unmarshal(body[i:end], &key)
			}
			at := key
			if path != "" {
				at = path + "." + key
			}
			var ft reflect.Type
			if fields == nil {
				ft = t.Elem()
			} else if ft = fields[key]; ft == nil {
				msg := "unknown field " + strconv.Quote(at)
				if accepted := acceptedFields(t); accepted != nil {
					msg += "; accepted fields: " + strings.Join(accepted, ", ") + " (names match exactly, case included)"
				}
				return 0, BadRequest("unknown_field", "%s", msg)
			}
			var err error
			if i, err = walkNames(body, skipSpace(body, skipSpace(body, end)+1), ft, at); err != nil {
				return 0, err
			}
			if i = skipSpace(body, i); body[i] == ',' {
				i = skipSpace(body, i+1)
			}
		}
		return i + 1, nil
	case '[':
		if k := t.Kind(); k != reflect.Slice && k != reflect.Array {
			return skipValue(body, i), nil
		}
		i = skipSpace(body, i+1)
		for n := 0; body[i] != ']'; n++ {
			var err error
			if i, err = walkNames(body, i, t.Elem(), path+"["+strconv.Itoa(n)+"]"); err != nil {
				return 0, err
			}
			if i = skipSpace(body, i); body[i] == ',' {
				i = skipSpace(body, i+1)
			}
		}
		return i + 1, nil
	}
	return skipValue(body, i), nil
}

// skipValue returns the index past the JSON value at b[i] (valid JSON).
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		end, _ := stringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			case '"':
				end, _ := stringEnd(b, i)
				i = end - 1
			}
		}
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

var structNamesCache sync.Map // reflect.Type → map[string]reflect.Type

// structNames maps the JSON names of struct type t's fields (embedded
// structs' fields in place, as encoding/json promotes them) to their types.
func structNames(t reflect.Type) map[string]reflect.Type {
	if m, ok := structNamesCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if name == "-" && tag == "-" {
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				add(ft)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, ok := m[name]; !ok {
				m[name] = f.Type
			}
		}
	}
	add(t)
	structNamesCache.Store(t, m)
	return m
}
