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
func checkText(body []byte) error { return checkTextLax(body, nil) }

// checkTextLax is checkText but for the lone surrogate escapes of strings
// whose member path (as fieldAt spells it: `messages[2].item.text`) lax
// accepts: those the caller stores as JSON text, byte for byte, never
// decoded into Go strings (a framework's own item). Invalid UTF-8 bytes
// stay refused everywhere. The paths are found in one more pass over body,
// only when it holds such an escape.
func checkTextLax(body []byte, lax func(path string) bool) error {
	depth := 0
	var lone []int // string starts holding a lone surrogate escape, when lax may take them
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '{' || c == '[':
			if depth++; depth > MaxDepth {
				return BadRequest("invalid_field", "%s nests deeper than %d levels of arrays and objects", fieldAt(body, i), MaxDepth)
			}
		case c == '}' || c == ']':
			depth--
		case c == '"':
			end, raw, esc := stringScan(body, i)
			if raw >= 0 || (esc >= 0 && lax == nil) {
				return notUTF8(body, i, min(uint(raw), uint(esc)))
			}
			if esc >= 0 {
				lone = append(lone, i)
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
	if len(lone) > 0 {
		if at := pathsAt(body, lone, lax); at >= 0 {
			_, _, esc := stringScan(body, at)
			return notUTF8(body, at, uint(esc))
		}
	}
	return nil
}

// notUTF8 refuses the string at body[i] for its byte bad.
func notUTF8(body []byte, i int, bad uint) error {
	return BadRequest("invalid_json", "%s holds text that is not valid UTF-8 (invalid bytes or a lone surrogate \\u escape) at byte %d; send UTF-8 text", fieldAt(body, i), bad)
}

// stringEnd returns the index just past the JSON string opening at b[i]
// (valid JSON), and the offset of its first invalid UTF-8 byte or lone
// surrogate escape, -1 when it has none.
func stringEnd(b []byte, i int) (end, bad int) {
	end, raw, esc := stringScan(b, i)
	if raw < 0 || (esc >= 0 && esc < raw) {
		return end, esc
	}
	return end, raw
}

// stringScan is stringEnd with the first invalid UTF-8 byte (raw) and the
// first lone surrogate escape (esc) apart, each -1 when there is none.
func stringScan(b []byte, i int) (end, raw, esc int) {
	raw, esc = -1, -1
	for i++; b[i] != '"'; i++ {
		switch c := b[i]; {
		case c == '\\':
			i++
			if b[i] != 'u' || esc >= 0 {
				continue
			}
			r := hex4(b[i+1 : i+5])
			switch {
			case r >= 0xdc00 && r <= 0xdfff:
				esc = i - 1
			case r >= 0xd800 && r <= 0xdbff:
				if i+10 < len(b) && b[i+5] == '\\' && b[i+6] == 'u' {
					if lo := hex4(b[i+7 : i+11]); lo >= 0xdc00 && lo <= 0xdfff {
						i += 10
						continue
					}
				}
				esc = i - 1
			}
			i += 4
		case c >= 0x80:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 && raw < 0 {
				raw = i
			}
			i += n - 1
		}
	}
	return i + 1, raw, esc
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
	path := ""
	pathsAt(body, []int{at}, func(p string) bool { path = p; return true })
	if len(path) > 120 {
		cut := 120
		for cut < len(path) && path[cut] != '.' && path[cut] != '[' {
			cut++
		}
		if cut < len(path) {
			path = path[:cut] + "…"
		}
	}
	if path == "" {
		return "the request body"
	}
	return "field " + strconv.Quote(path)
}

// pathsAt walks body (valid JSON) once and gives f the member path of each
// offset of targets (ascending): "a.b[2].c", "" for a value outside any
// object or a key of the top object (a key names its object). It returns
// the first target f refused, -1 when none.
func pathsAt(body []byte, targets []int, f func(path string) bool) int {
	type frame struct {
		object bool
		key    string
		index  int
	}
	var stack []frame
	expectKey := false
	path := func() string {
		var b strings.Builder
		for n, fr := range stack {
			if fr.object {
				if fr.key == "" {
					break
				}
				if n > 0 {
					b.WriteByte('.')
				}
				b.WriteString(fr.key)
			} else if n > 0 || b.Len() > 0 {
				b.WriteString("[" + strconv.Itoa(fr.index) + "]")
			}
		}
		return b.String()
	}
	t := 0
	for i := 0; i < len(body) && t < len(targets); i++ {
		for t < len(targets) && targets[t] == i {
			p := ""
			if expectKey && len(stack) > 0 { // at a key: name its object
				saved := stack[len(stack)-1].key
				stack[len(stack)-1].key = ""
				p = path()
				stack[len(stack)-1].key = saved
			} else {
				p = path()
			}
			if !f(p) {
				return targets[t]
			}
			t++
		}
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
	for ; t < len(targets); t++ { // past the end: the top level
		if !f(path()) {
			return targets[t]
		}
	}
	return -1
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
