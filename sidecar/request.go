package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// MaxIDLength is the longest user_id, session_id, qa_id or lock name.
const MaxIDLength = 128

// ValidID reports whether s is 1–128 characters of [A-Za-z0-9_.@-], other
// than "." and "..". A ':' would let two user/session pairs map to one Redis
// key and braces would change Redis Cluster hash slots, so both are refused;
// "." and ".." cannot travel in a URL path (clients and servers resolve
// them), so an entry with such an id could be written but never read.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '_', c == '.', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}

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

// DecodeJSON reads the request body into v strictly: the body must be one
// JSON value, unknown fields and wrong types are 400s naming the field, a body
// over the size limit is 413 and a non-JSON Content-Type is 415. A missing
// Content-Type is taken as JSON.
func DecodeJSON(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return Errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "request body is larger than %d bytes", tooBig.Limit)
		}
		return BadRequest("invalid_body", "reading request body: %v", err)
	}
	return DecodeJSONBytes(body, v)
}

// DecodeJSONBytes is DecodeJSON on a body already read.
func DecodeJSONBytes(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return BadRequest("invalid_json", "request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, v)
	}
	if dec.More() {
		return BadRequest("invalid_json", "request body holds more than one JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return BadRequest("invalid_json", "unexpected data after the JSON value")
	}
	return nil
}

func jsonError(err error, v any) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return BadRequest("invalid_json", "malformed JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return BadRequest("invalid_json", "request body must be a JSON %s, not %s", kindName(typ.Type), typ.Value)
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
