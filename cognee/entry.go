package cognee

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// FieldError is a value Cognee's models would reject.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q %s", e.Field, e.Problem) }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// QAFields are the writable fields of a SessionQAEntry as they arrive in a
// request: a nil RawMessage is absent, "null" is an explicit null.
type QAFields struct {
	Question              json.RawMessage `json:"question"`
	Context               json.RawMessage `json:"context"`
	Answer                json.RawMessage `json:"answer"`
	FeedbackText          json.RawMessage `json:"feedback_text"`
	FeedbackScore         json.RawMessage `json:"feedback_score"`
	UsedGraphElementIDs   json.RawMessage `json:"used_graph_element_ids"`
	MemifyMetadata        json.RawMessage `json:"memify_metadata"`
	UsedSessionContextIDs json.RawMessage `json:"used_session_context_ids"`
}

// Field is one top-level field of an entry with its value encoded as
// json.dumps writes it.
type Field struct {
	Name  string
	Value []byte
}

// qaOrder is model_dump()'s field order, which json.dumps keeps.
var qaOrder = [...]string{"time", "question", "context", "answer", "qa_id", "feedback_text",
	"feedback_score", "used_graph_element_ids", "memify_metadata", "used_session_context_ids"}

var null = []byte("null")

// NewQAEntry validates an append and encodes the stored entry exactly as
// Cognee's create_qa_entry would: all ten fields in model order, nulls
// included, empty containers as null. question and answer are required;
// context defaults to "". The error is the first problem in field order.
func NewQAEntry(f QAFields, qaID string, now time.Time) ([]byte, error) {
	if f.Question == nil {
		return nil, fieldErr("question", "is required")
	}
	if f.Answer == nil {
		for _, s := range []struct {
			name string
			raw  json.RawMessage
		}{{"question", f.Question}, {"context", f.Context}} {
			if s.raw != nil {
				if _, err := requiredString(s.name, s.raw); err != nil {
					return nil, err
				}
			}
		}
		return nil, fieldErr("answer", "is required")
	}
	if f.Context == nil {
		f.Context = json.RawMessage(`""`)
	}
	updates, memify, err := f.encode()
	if err != nil {
		return nil, err
	}
	var vals [len(qaOrder)][]byte // by position in qaOrder; nil = null
	vals[0] = AppendString(make([]byte, 0, 36), PythonTime(now))
	vals[4] = AppendString(nil, qaID)
	for _, u := range updates {
		vals[qaIndex(u.Name)] = u.Value
	}
	if memify != nil {
		vals[8] = memify
	}
	size := 200
	for _, v := range vals {
		size += len(v)
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, name := range qaOrder {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':', ' ')
		if vals[i] != nil {
			b = append(b, vals[i]...)
		} else {
			b = append(b, null...)
		}
	}
	return append(b, '}'), nil
}

func qaIndex(name string) int {
	for i, n := range qaOrder {
		if n == name {
			return i
		}
	}
	panic("cognee: unknown entry field " + name)
}

// QAUpdate validates a PATCH: it returns the fields to set (encoded) and the
// memify_metadata patch to merge key-wise (nil for none). An empty update is
// an error.
func QAUpdate(f QAFields) ([]Field, []byte, error) {
	updates, memify, err := f.encode()
	if err != nil {
		return nil, nil, err
	}
	if len(updates) == 0 && memify == nil && f.MemifyMetadata == nil {
		return nil, nil, fieldErr("", "none given: send at least one field to change")
	}
	return updates, memify, nil
}

// encode validates every present field. memify_metadata comes back apart:
// an object to merge, or, for an explicit null or {}, a "null" field update.
func (f QAFields) encode() ([]Field, []byte, error) {
	var out []Field
	for _, s := range []struct {
		name string
		raw  json.RawMessage
	}{{"question", f.Question}, {"context", f.Context}, {"answer", f.Answer}} {
		if s.raw == nil {
			continue
		}
		v, err := requiredString(s.name, s.raw)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, Field{s.name, v})
	}
	if f.FeedbackText != nil {
		v, err := optionalString("feedback_text", f.FeedbackText)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, Field{"feedback_text", v})
	}
	if f.FeedbackScore != nil {
		v, err := feedbackScore(f.FeedbackScore)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, Field{"feedback_score", v})
	}
	if f.UsedGraphElementIDs != nil {
		v, err := graphIDs(f.UsedGraphElementIDs)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, Field{"used_graph_element_ids", v})
	}
	if f.UsedSessionContextIDs != nil {
		v, err := stringList("used_session_context_ids", f.UsedSessionContextIDs)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, Field{"used_session_context_ids", v})
	}
	var memify []byte
	if f.MemifyMetadata != nil {
		v, err := memifyMetadata(f.MemifyMetadata)
		if err != nil {
			return nil, nil, err
		}
		if bytes.Equal(v, null) {
			out = append(out, Field{"memify_metadata", null})
		} else {
			memify = v
		}
	}
	return out, memify, nil
}

// FeedbackUpdate validates PUT .../feedback: feedback_text and/or
// feedback_score.
func FeedbackUpdate(text, score json.RawMessage) ([]Field, error) {
	var out []Field
	if text != nil {
		v, err := optionalString("feedback_text", text)
		if err != nil {
			return nil, err
		}
		out = append(out, Field{"feedback_text", v})
	}
	if score != nil {
		v, err := feedbackScore(score)
		if err != nil {
			return nil, err
		}
		out = append(out, Field{"feedback_score", v})
	}
	if len(out) == 0 {
		return nil, fieldErr("feedback_text", "or feedback_score is required")
	}
	return out, nil
}

// ClearFeedback is DELETE .../feedback: both fields to null.
func ClearFeedback() []Field {
	return []Field{{"feedback_text", null}, {"feedback_score", null}}
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), null) }

func requiredString(name string, raw json.RawMessage) ([]byte, error) {
	// Fast path: a JSON string without escapes is its own content.
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0 &&
		bytes.IndexByte(raw[1:n-1], '"') < 0 && utf8.Valid(raw) {
		return AppendString(make([]byte, 0, n+16), string(raw[1:n-1])), nil
	}
	var s string
	if isNull(raw) || json.Unmarshal(raw, &s) != nil {
		return nil, fieldErr(name, "must be a string, not %s", describe(raw))
	}
	return AppendString(nil, s), nil
}

func optionalString(name string, raw json.RawMessage) ([]byte, error) {
	if isNull(raw) {
		return null, nil
	}
	return requiredString(name, raw)
}

func feedbackScore(raw json.RawMessage) ([]byte, error) {
	if isNull(raw) {
		return null, nil
	}
	t := strings.TrimSpace(string(raw))
	n, err := strconv.Atoi(t)
	if err != nil {
		return nil, fieldErr("feedback_score", "must be an integer from 1 to 5 or null, not %s", describe(raw))
	}
	if n < 1 || n > 5 {
		return nil, fieldErr("feedback_score", "must be from 1 to 5, not %d", n)
	}
	return strconv.AppendInt(nil, int64(n), 10), nil
}

// graphIDs validates used_graph_element_ids: only node_ids and edge_ids, each
// a list of strings; {} is stored as null, as Cognee's validator returns None.
func graphIDs(raw json.RawMessage) ([]byte, error) {
	if isNull(raw) {
		return null, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, fieldErr("used_graph_element_ids", "must be an object with node_ids and/or edge_ids, not %s", describe(raw))
	}
	for k := range m {
		if k != "node_ids" && k != "edge_ids" {
			return nil, fieldErr("used_graph_element_ids", "may only have the keys node_ids and edge_ids, not %q", k)
		}
	}
	b := []byte{'{'}
	for _, k := range []string{"node_ids", "edge_ids"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		ids, ok := strictStrings(v)
		if !ok {
			return nil, fieldErr("used_graph_element_ids", "%s must be a list of strings", k)
		}
		b = appendKey(b, len(b) == 1, k)
		b = appendStrings(b, ids)
	}
	if len(b) == 1 {
		return null, nil
	}
	return append(b, '}'), nil
}

// stringList validates a list of strings; [] is stored as null.
func stringList(name string, raw json.RawMessage) ([]byte, error) {
	if isNull(raw) {
		return null, nil
	}
	ids, ok := strictStrings(raw)
	if !ok {
		return nil, fieldErr(name, "must be a list of strings, not %s", describe(raw))
	}
	if len(ids) == 0 {
		return null, nil
	}
	return appendStrings(nil, ids), nil
}

// strictStrings decodes a JSON array whose every element is a string (a
// null element is refused, where encoding/json would make it "").
func strictStrings(raw json.RawMessage) ([]string, bool) {
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil || elems == nil {
		return nil, false
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		if len(e) == 0 || e[0] != '"' || json.Unmarshal(e, &out[i]) != nil {
			return nil, false
		}
	}
	return out, true
}

// appendKey appends an object member's key as json.dumps writes it: ", "
// before every member but the first, the key, ": ".
func appendKey(b []byte, first bool, key string) []byte {
	if !first {
		b = append(b, ',', ' ')
	}
	b = AppendString(b, key)
	return append(b, ':', ' ')
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',', ' ')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

// memifyMetadata validates memify_metadata as Cognee's model does
// (Optional[Dict[str, bool]]): string keys whose values are booleans. A
// detail object would make Cognee's reads of the whole session fail, so it is
// refused; values Cognee itself stored are never rewritten. Key order is
// kept; {} is stored as null.
func memifyMetadata(raw json.RawMessage) ([]byte, error) {
	if isNull(raw) {
		return null, nil
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, fieldErr("memify_metadata", "must be an object of booleans, not %s", describe(raw))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fieldErr("memify_metadata", "must be an object of booleans")
	}
	if len(m) == 0 {
		return null, nil
	}
	for k, v := range m {
		if t := bytes.TrimSpace(v); !bytes.Equal(t, []byte("true")) && !bytes.Equal(t, []byte("false")) {
			return nil, fieldErr("memify_metadata", "value of %q must be true or false (Cognee reads memify_metadata as a map of booleans), not %s", k, describe(t))
		}
	}
	return Transcode(raw)
}

// PythonTime formats t as Python's datetime.now(timezone.utc).isoformat():
// microseconds, omitted when zero, and the +00:00 offset.
func PythonTime(t time.Time) string {
	t = t.UTC()
	b := make([]byte, 0, 32)
	b = t.AppendFormat(b, "2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		b = append(b, '.', byte('0'+us/100000), byte('0'+us/10000%10), byte('0'+us/1000%10),
			byte('0'+us/100%10), byte('0'+us/10%10), byte('0'+us%10))
	}
	return string(append(b, "+00:00"...))
}

// NewID returns a random UUID (version 4), Cognee's id format.
func NewID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	const h = hexDigits
	b := make([]byte, 0, 36)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, h[c>>4], h[c&0xf])
	}
	return string(b)
}
