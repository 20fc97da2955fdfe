package cognee

import (
	"bytes"
	"encoding/json"
	"time"
)

// CheckQAEntry reports whether a stored Q&A entry is one Cognee's
// SessionQAEntry model accepts when it reads the session (one entry it
// refuses breaks its reads of the whole session): a JSON object (Python's
// NaN allowed) whose time is an ISO 8601 string, question, context and
// answer strings, qa_id and feedback_text strings or null, feedback_score
// an integer from 1 to 5 or null, used_graph_element_ids null or an object
// with only node_ids and edge_ids, lists of strings, memify_metadata null
// or an object of booleans (Dict[str, bool]), used_session_context_ids null
// or a list of strings. The error names the first field in breach.
func CheckQAEntry(stored []byte) error {
	strict, err := Strict(stored)
	if err != nil {
		return fieldErr("", "the entry is not JSON")
	}
	var m map[string]json.RawMessage
	if t := bytes.TrimSpace(strict); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &m) != nil {
		return fieldErr("", "the entry is not a JSON object")
	}
	str := func(raw json.RawMessage) (string, bool) {
		var s string
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	for _, name := range []string{"time", "question", "context", "answer"} {
		if _, ok := str(m[name]); !ok {
			return fieldErr(name, "must be a string")
		}
	}
	tm, _ := str(m["time"])
	if !isoTime(tm) {
		return fieldErr("time", "is not an ISO 8601 time: %q", tm)
	}
	for _, name := range []string{"qa_id", "feedback_text"} {
		if v, ok := m[name]; ok && !isNull(v) {
			if _, ok := str(v); !ok {
				return fieldErr(name, "must be a string or null")
			}
		}
	}
	if v, ok := m["feedback_score"]; ok && !isNull(v) {
		if _, err := feedbackScore(v); err != nil || bytes.ContainsAny(v, ".eE") {
			return fieldErr("feedback_score", "must be an integer from 1 to 5 or null")
		}
	}
	if v, ok := m["used_graph_element_ids"]; ok && !isNull(v) {
		var g map[string]json.RawMessage
		if v[0] != '{' || json.Unmarshal(v, &g) != nil {
			return fieldErr("used_graph_element_ids", "must be an object or null")
		}
		for k, ids := range g {
			if _, ok := strictStrings(ids); !ok || (k != "node_ids" && k != "edge_ids") {
				return fieldErr("used_graph_element_ids", "may only hold node_ids and edge_ids, lists of strings")
			}
		}
	}
	if v, ok := m["memify_metadata"]; ok && !isNull(v) {
		var flags map[string]json.RawMessage
		if v[0] != '{' || json.Unmarshal(v, &flags) != nil {
			return fieldErr("memify_metadata", "must be an object of booleans or null")
		}
		for k, f := range flags {
			if s := string(f); s != "true" && s != "false" {
				return fieldErr("memify_metadata", "value of %q is not a boolean", k)
			}
		}
	}
	if v, ok := m["used_session_context_ids"]; ok && !isNull(v) {
		if _, ok := strictStrings(v); !ok {
			return fieldErr("used_session_context_ids", "must be a list of strings or null")
		}
	}
	return nil
}

// isoTime reports whether s is a time Python's datetime.fromisoformat reads
// in the forms Cognee and the sidecar write (with or without fraction and
// offset).
func isoTime(s string) bool {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02T15:04:05"} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}
