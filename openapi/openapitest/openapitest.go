package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Doc is a parsed OpenAPI document. Numbers are json.Number.
type Doc struct {
	Root map[string]any
}

// Parse decodes an OpenAPI document.
func Parse(b []byte) (*Doc, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return &Doc{Root: root}, nil
}

// Methods are the operation keys of a path item.
var Methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Operation is one method of one path.
type Operation struct {
	Method   string // upper case, as in a ServeMux pattern
	Path     string
	ID       string
	Op       map[string]any
	PathItem map[string]any
}

// Pattern is the operation as a ServeMux pattern: "GET /v1/...".
func (o Operation) Pattern() string { return o.Method + " " + o.Path }

// ClientMethod reports whether the sidecar's clients have a method for the
// operation: all but those marked "x-client-method": false (the MCP
// route, which MCP clients speak).
func (o Operation) ClientMethod() bool {
	v, ok := o.Op["x-client-method"].(bool)
	return !ok || v
}

// Operations lists every operation, sorted by pattern.
func (d *Doc) Operations() []Operation {
	var out []Operation
	paths, _ := d.Root["paths"].(map[string]any)
	for path, item := range paths {
		pi, _ := item.(map[string]any)
		for _, m := range Methods {
			op, ok := pi[m].(map[string]any)
			if !ok {
				continue
			}
			id, _ := op["operationId"].(string)
			out = append(out, Operation{Method: strings.ToUpper(m), Path: path, ID: id, Op: op, PathItem: pi})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pattern() < out[j].Pattern() })
	return out
}

// Op returns the operation with this operationId.
func (d *Doc) Op(id string) (Operation, bool) {
	for _, o := range d.Operations() {
		if o.ID == id {
			return o, true
		}
	}
	return Operation{}, false
}

// Resolve follows a local reference ("#/components/schemas/Error").
func (d *Doc) Resolve(ref string) (any, error) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("$ref %q is not local", ref)
	}
	var cur any = d.Root
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q: %q is not in an object", ref, tok)
		}
		if cur, ok = m[tok]; !ok {
			return nil, fmt.Errorf("$ref %q: no %q", ref, tok)
		}
	}
	return cur, nil
}

// Deref returns v, or what it refers to when it is a {"$ref": ...} object.
func (d *Doc) Deref(v any) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%v is not an object", v)
	}
	for range 10 {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, nil
		}
		r, err := d.Resolve(ref)
		if err != nil {
			return nil, err
		}
		if m, ok = r.(map[string]any); !ok {
			return nil, fmt.Errorf("$ref %q is not an object", ref)
		}
	}
	return nil, fmt.Errorf("$ref chain too long")
}

// Refs returns every $ref in the document.
func (d *Doc) Refs() []string {
	var refs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				refs = append(refs, r)
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(d.Root)
	return refs
}

// Parameters returns the operation's parameters (path-level ones first,
// overridden by operation-level ones of the same name and place), resolved.
func (d *Doc) Parameters(o Operation) ([]map[string]any, error) {
	var out []map[string]any
	for _, src := range []any{o.PathItem["parameters"], o.Op["parameters"]} {
		list, _ := src.([]any)
		for _, p := range list {
			pm, err := d.Deref(p)
			if err != nil {
				return nil, err
			}
			out = slices.DeleteFunc(out, func(q map[string]any) bool { return q["name"] == pm["name"] && q["in"] == pm["in"] })
			out = append(out, pm)
		}
	}
	return out, nil
}

// Response returns the operation's response for a status code, resolved.
func (d *Doc) Response(o Operation, status int) (map[string]any, bool, error) {
	resps, _ := o.Op["responses"].(map[string]any)
	r, ok := resps[strconv.Itoa(status)]
	if !ok {
		return nil, false, nil
	}
	m, err := d.Deref(r)
	return m, true, err
}

// JSONMedia returns the application/json media type object of a request
// body or response, or nil.
func JSONMedia(obj map[string]any) map[string]any {
	content, _ := obj["content"].(map[string]any)
	m, _ := content["application/json"].(map[string]any)
	return m
}

// EventStreamMedia returns the text/event-stream media of a response
// (Server-Sent Events), or nil.
func EventStreamMedia(obj map[string]any) map[string]any {
	content, _ := obj["content"].(map[string]any)
	m, _ := content["text/event-stream"].(map[string]any)
	return m
}

// annotations are keywords that do not constrain a value.
var annotations = map[string]bool{"description": true, "example": true, "examples": true, "default": true,
	"format": true, "title": true, "summary": true}

// Validate checks v (decoded with UseNumber) against a schema of the subset
// the document uses; a keyword outside that subset is an error, so nothing is
// silently not checked.
func (d *Doc) Validate(schema any, v any) error { return d.validate(schema, v, "$") }

// ValidateJSON decodes body and validates it.
func (d *Doc) ValidateJSON(schema any, body []byte) error {
	v, err := Decode(body)
	if err != nil {
		return err
	}
	return d.Validate(schema, v)
}

// Decode decodes one JSON value with json.Number for numbers.
func Decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Normalize turns a value decoded without UseNumber (float64) into one with
// json.Number, by encoding and decoding it again.
func Normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

func typeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func (d *Doc) validate(schema any, v any, at string) error {
	if b, ok := schema.(bool); ok {
		if !b {
			return fmt.Errorf("%s: no value is allowed", at)
		}
		return nil
	}
	s, ok := schema.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: schema %v is not an object", at, schema)
	}
	if err := supported(s, at); err != nil {
		return err
	}
	// each keyword family in turn; the first failure is the error
	for _, check := range []func(s map[string]any, v any, at string) error{
		d.validateRef, validateType, validateValue, validateNumber, validateString, d.validateObjectValue, d.validateArray, d.validateCombined,
	} {
		if err := check(s, v, at); err != nil {
			return err
		}
	}
	return nil
}

// supported refuses a schema keyword this validator does not check.
func supported(s map[string]any, at string) error {
	for k := range s {
		switch k {
		case "$ref", "type", "enum", "const", "properties", "required", "additionalProperties", "items",
			"minProperties", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern", "oneOf", "anyOf", "allOf", "not":
		default:
			if !annotations[k] {
				return fmt.Errorf("%s: schema keyword %q is not supported by this validator", at, k)
			}
		}
	}
	return nil
}

func (d *Doc) validateRef(s map[string]any, v any, at string) error {
	ref, ok := s["$ref"].(string)
	if !ok {
		return nil
	}
	r, err := d.Resolve(ref)
	if err != nil {
		return err
	}
	return d.validate(r, v, at)
}

func validateType(s map[string]any, v any, at string) error {
	t, ok := s["type"]
	if !ok {
		return nil
	}
	var types []string
	switch t := t.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			types = append(types, e.(string))
		}
	}
	got := typeOf(v)
	if !slices.Contains(types, got) && !(got == "integer" && slices.Contains(types, "number")) {
		return fmt.Errorf("%s: %s is not of type %v", at, got, types)
	}
	return nil
}

// validateValue checks enum and const.
func validateValue(s map[string]any, v any, at string) error {
	if enum, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(enum, func(e any) bool { return equal(e, v) }) {
			return fmt.Errorf("%s: %v is not one of %v", at, v, enum)
		}
	}
	if c, ok := s["const"]; ok && !equal(c, v) {
		return fmt.Errorf("%s: %v is not %v", at, v, c)
	}
	return nil
}

func validateNumber(s map[string]any, v any, at string) error {
	n, ok := v.(json.Number)
	if !ok {
		return nil
	}
	f, _ := n.Float64()
	if lo, ok := s["minimum"].(json.Number); ok {
		if l, _ := lo.Float64(); f < l {
			return fmt.Errorf("%s: %v is below the minimum %v", at, n, lo)
		}
	}
	if hi, ok := s["maximum"].(json.Number); ok {
		if h, _ := hi.Float64(); f > h {
			return fmt.Errorf("%s: %v is above the maximum %v", at, n, hi)
		}
	}
	return nil
}

func validateString(s map[string]any, v any, at string) error {
	str, ok := v.(string)
	if !ok {
		return nil
	}
	n := utf8.RuneCountInString(str)
	if lo, ok := s["minLength"].(json.Number); ok {
		if l, _ := lo.Int64(); int64(n) < l {
			return fmt.Errorf("%s: %q is shorter than %v", at, str, lo)
		}
	}
	if hi, ok := s["maxLength"].(json.Number); ok {
		if h, _ := hi.Int64(); int64(n) > h {
			return fmt.Errorf("%s: %q is longer than %v", at, str, hi)
		}
	}
	if p, ok := s["pattern"].(string); ok {
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("%s: pattern %q: %v", at, p, err)
		}
		if !re.MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", at, str, p)
		}
	}
	return nil
}

func (d *Doc) validateObjectValue(s map[string]any, v any, at string) error {
	if obj, ok := v.(map[string]any); ok {
		return d.validateObject(s, obj, at)
	}
	return nil
}

func (d *Doc) validateArray(s map[string]any, v any, at string) error {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	if lo, ok := s["minItems"].(json.Number); ok {
		if l, _ := lo.Int64(); int64(len(arr)) < l {
			return fmt.Errorf("%s: %d items, fewer than %v", at, len(arr), lo)
		}
	}
	if hi, ok := s["maxItems"].(json.Number); ok {
		if h, _ := hi.Int64(); int64(len(arr)) > h {
			return fmt.Errorf("%s: %d items, more than %v", at, len(arr), hi)
		}
	}
	if items, ok := s["items"]; ok {
		for i, e := range arr {
			if err := d.validate(items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateCombined checks allOf, anyOf, oneOf and not.
func (d *Doc) validateCombined(s map[string]any, v any, at string) error {
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			if err := d.validate(sub, v, at); err != nil {
				return err
			}
		}
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		if !slices.ContainsFunc(anyOf, func(sub any) bool { return d.validate(sub, v, at) == nil }) {
			return fmt.Errorf("%s: %v matches none of anyOf", at, v)
		}
	}
	if oneOf, ok := s["oneOf"].([]any); ok {
		n := 0
		var errs []string
		for _, sub := range oneOf {
			if err := d.validate(sub, v, at); err == nil {
				n++
			} else {
				errs = append(errs, err.Error())
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: %v matches %d of oneOf, not 1 (%s)", at, v, n, strings.Join(errs, "; "))
		}
	}
	if not, ok := s["not"]; ok && d.validate(not, v, at) == nil {
		return fmt.Errorf("%s: %v matches a schema it must not (not: %v)", at, v, not)
	}
	return nil
}

func (d *Doc) validateObject(s map[string]any, obj map[string]any, at string) error {
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: required property %q is missing", at, r)
			}
		}
	}
	if lo, ok := s["minProperties"].(json.Number); ok {
		if l, _ := lo.Int64(); int64(len(obj)) < l {
			return fmt.Errorf("%s: fewer than %v properties", at, lo)
		}
	}
	props, _ := s["properties"].(map[string]any)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if ps, ok := props[k]; ok {
			if err := d.validate(ps, obj[k], at+"."+k); err != nil {
				return err
			}
			continue
		}
		if ap, ok := s["additionalProperties"]; ok {
			if err := d.validate(ap, obj[k], at+"."+k); err != nil {
				if b, isBool := ap.(bool); isBool && !b {
					return fmt.Errorf("%s: property %q is not allowed", at, k)
				}
				return err
			}
		}
	}
	return nil
}

func equal(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
