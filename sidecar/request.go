package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// MaxIDLength is the longest user_id, session_id, qa_id or lock name.
const MaxIDLength = redisstore.MaxIDLength

// ValidID reports whether s is 1–128 characters of [A-Za-z0-9_.@-], other
// than "." and ".." (the keyspace's rule: redisstore.ValidID).
func ValidID(s string) bool { return redisstore.ValidID(s) }

// PathID returns the path wildcard name of r, or a 400 invalid_id naming it.
func PathID(r *http.Request, name string) (string, error) {
	v := r.PathValue(name)
	if !ValidID(v) {
		return "", BadRequest("invalid_id", "%s must be 1-%d characters of A-Z a-z 0-9 _ . @ - (not . or ..)", name, MaxIDLength)
	}
	return v, nil
}

// PathIDs returns the validated path values named, in order, or the 400 of
// the first that is not an id.
func PathIDs(r *http.Request, names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, n := range names {
		v, err := PathID(r, n)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// SessionIDs returns the validated {user_id} and {session_id} of r.
func SessionIDs(r *http.Request) (user, session string, err error) {
	if user, err = PathID(r, "user_id"); err != nil {
		return "", "", err
	}
	session, err = PathID(r, "session_id")
	return user, session, err
}

// checkQuery refuses a query string naming a parameter the route does not
// take (400 unknown_parameter, listing those it takes), or one that does
// not parse (400 invalid_query): the one check of every route's query.
func (rt Route) checkQuery(raw string) *Error {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return BadRequest("invalid_query", "the query string does not parse: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if rt.takes(name) {
			continue
		}
		if len(rt.Query) == 0 {
			return BadRequest("unknown_parameter", "unknown query parameter %q: this route takes none", name)
		}
		return BadRequest("unknown_parameter", "unknown query parameter %q; accepted: %s", name, strings.Join(rt.Query, ", "))
	}
	return nil
}

// takes reports whether the route takes the query parameter name.
func (rt Route) takes(name string) bool {
	for _, p := range rt.Query {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && len(name) > len(prefix) && strings.HasPrefix(name, prefix) || p == name {
			return true
		}
	}
	return false
}

// QueryInt parses an optional integer query parameter within [lo, hi].
func QueryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, BadRequest("invalid_query", "%s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}

// SessionJSON is SessionIDs, then the request's body decoded into a T by
// DecodeJSON: the prologue of a handler that writes one session.
func SessionJSON[T any](r *http.Request) (user, session string, body T, err error) {
	if user, session, err = SessionIDs(r); err == nil {
		err = DecodeJSON(r, &body)
	}
	return user, session, body, err
}

// DecodeJSON reads the request body into v strictly: the body must be one
// JSON value of valid UTF-8 (checkText: no lone surrogates, at most
// MaxDepth levels, numbers a float64 holds); unknown fields, names not
// spelled exactly (case included), wrong types and a key repeated in one
// object (at any depth) are 400s naming the field, a body
// over the size limit is 413 and a non-JSON Content-Type is 415. A missing
// Content-Type is taken as JSON.
func DecodeJSON(r *http.Request, v any) error {
	body, err := ReadJSON(r)
	if err != nil {
		return err
	}
	return DecodeJSONBytes(body, v)
}

// MaxIdempotencyKey is the longest Idempotency-Key header.
const MaxIdempotencyKey = 255

// IdempotencyKey returns the request's Idempotency-Key header ("" when
// absent), or a 400 invalid_header when it is not 1-255 printable ASCII
// characters: the one check of every route that takes the header.
func IdempotencyKey(r *http.Request) (string, error) {
	k := r.Header.Get("Idempotency-Key")
	if k == "" {
		return "", nil
	}
	ok := len(k) <= MaxIdempotencyKey
	for i := 0; ok && i < len(k); i++ {
		ok = k[i] >= 0x21 && k[i] <= 0x7e
	}
	if !ok {
		return "", BadRequest("invalid_header", "the Idempotency-Key header must be 1-%d printable ASCII characters", MaxIdempotencyKey)
	}
	return k, nil
}

// DecodeOptionalJSON is DecodeJSON for a route whose every field is
// optional: no body (Content-Length 0, or a chunked body of no bytes or
// only whitespace) leaves v as it is, as {} would.
func DecodeOptionalJSON(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	body, err := ReadJSON(r)
	if err != nil || len(bytes.TrimSpace(body)) == 0 {
		return err
	}
	return DecodeJSONBytes(body, v)
}

// ReadJSON reads a JSON request body as DecodeJSON does (415 for a non-JSON
// Content-Type, 413 over the size limit, 408 past the read deadline)
// without decoding it: for a handler with its own quick path
// (ObjectFields) that falls back to DecodeJSONBytes.
func ReadJSON(r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, Errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
		}
	}
	body, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		var tooBig *http.MaxBytesError
		var apiErr *Error
		if errors.As(err, &apiErr) {
			return nil, apiErr // the in-flight byte budget (budget.go)
		}
		if errors.As(err, &tooBig) {
			return nil, Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "request body is larger than %d bytes", tooBig.Limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, Errorf(http.StatusRequestTimeout, "request_timeout", "the request body did not arrive within SIDECAR_READ_TIMEOUT")
		}
		return nil, BadRequest("invalid_body", "reading request body: %v", err)
	}
	return body, nil
}

// readBody is io.ReadAll with one allocation of the announced size (plus
// the byte that meets EOF): the route already refused a size over its
// limit (413) and counted it against the in-flight byte budget, so
// allocating it at once holds no more than the budget allows, and saves the
// doubling copies of a growing buffer (the garbage of an 8 MiB body would
// be another 16 MiB). A body of unknown size grows as it arrives.
func readBody(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// DecodeJSONBytes is DecodeJSON on a body already read.
func DecodeJSONBytes(body []byte, v any) error { return DecodeJSONBytesLax(body, v, nil) }

// DecodeJSONLax is DecodeJSON but for the lone surrogate escapes
// ("\ud800", as JavaScript's strings hold them) of strings whose member
// path lax accepts ("messages[2].item.text": fieldAt's spelling): for a
// field the handler keeps as JSON text, byte for byte (a json.RawMessage
// never decoded into a Go string, which would turn the escape into
// U+FFFD), such as a framework's own item. Invalid UTF-8 bytes stay
// refused everywhere.
func DecodeJSONLax(r *http.Request, v any, lax func(path string) bool) error {
	body, err := ReadJSON(r)
	if err != nil {
		return err
	}
	return DecodeJSONBytesLax(body, v, lax)
}

// DecodeJSONBytesLax is DecodeJSONLax on a body already read.
func DecodeJSONBytesLax(body []byte, v any, lax func(path string) bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return BadRequest("invalid_json", "request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if json.Valid(body) { // a strictness error names the field better
			if serr := checkTextLax(body, lax); serr != nil {
				return serr
			}
		}
		return jsonError(err, v)
	}
	if dec.More() {
		return BadRequest("invalid_json", "request body holds more than one JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return BadRequest("invalid_json", "unexpected data after the JSON value")
	}
	// body is one valid JSON value: the strictness every body passes
	if err := checkTextLax(body, lax); err != nil {
		return err
	}
	if path, dup := duplicateKey(body); dup {
		return BadRequest("duplicate_field", "field %q appears twice in one object; send each field once", path)
	}
	return exactNames(body, v)
}

// duplicateKey returns the dotted path of the first key that appears twice
// in one object of body (valid JSON) and true, or false (the path of an
// empty key at the top level is "" too). Go's decoder keeps the last of
// two equal keys, but the raw bytes a handler passes on keep both, and
// Python's json.loads and Redis scripts would each pick a different one.
func duplicateKey(body []byte) (string, bool) {
	type frame struct {
		object bool
		key    string
		keys   []string
		seen   map[string]bool // once an object has many keys
	}
	var stack []*frame
	expectKey := false
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{':
			stack = append(stack, &frame{object: true})
			expectKey = true
		case '[':
			stack = append(stack, &frame{})
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			expectKey = stack[len(stack)-1].object
		case '"':
			j := i + 1
			for body[j] != '"' {
				if body[j] == '\\' {
					j++
				}
				j++
			}
			if expectKey {
				key := string(body[i+1 : j])
				if bytes.IndexByte(body[i+1:j], '\\') >= 0 {
					_ = json.Unmarshal(body[i:j+1], &key)
				}
				top := stack[len(stack)-1]
				if top.seen == nil && len(top.keys) >= 16 {
					top.seen = make(map[string]bool, 32)
					for _, k := range top.keys {
						top.seen[k] = true
					}
				}
				dup := top.seen[key]
				if top.seen == nil {
					for _, k := range top.keys {
						dup = dup || k == key
					}
					top.keys = append(top.keys, key)
				} else {
					top.seen[key] = true
				}
				top.key = key
				if dup {
					var path []string
					for _, f := range stack {
						if f.object {
							path = append(path, f.key)
						}
					}
					return strings.Join(path, "."), true
				}
				expectKey = false
			}
			i = j
		}
	}
	return "", false
}

func jsonError(err error, v any) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return BadRequest("invalid_json", "malformed JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return BadRequest("invalid_json", "request body must be %s, not %s", kindName(typ.Type), typ.Value)
		}
		return BadRequest("invalid_field", "field %q must be %s, not %s", typ.Field, kindName(typ.Type), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return BadRequest("invalid_json", "malformed JSON: unexpected end of body")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		if accepted := acceptedFields(reflect.TypeOf(v)); accepted != nil {
			return BadRequest("unknown_field", "unknown field %s; accepted fields: %s", field, strings.Join(accepted, ", "))
		}
		return BadRequest("unknown_field", "unknown field %s", field)
	}
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return BadRequest("invalid_json", "%v", err)
}

// acceptedFields lists the JSON names of t's fields in declaration order
// (embedded structs' fields in place), or nil when t is not a struct or
// holds a nested struct, whose unknown field the list would not cover.
func acceptedFields(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			inner := acceptedFields(ft)
			if inner == nil {
				return nil
			}
			names = append(names, inner...)
			continue
		}
		if ft.Kind() == reflect.Struct && !ft.Implements(unmarshaler) && !reflect.PointerTo(ft).Implements(unmarshaler) {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch k := t.Kind().String(); k {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "interface":
		return "a JSON value"
	default:
		return fmt.Sprintf("a %s", k)
	}
}
