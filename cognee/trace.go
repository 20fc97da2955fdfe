package cognee

import (
	"bytes"
	"encoding/json"
)

// TraceFields is an agent trace step as it arrives in a request (Cognee's
// SessionAgentTraceEntry); trace_id may be left out for the sidecar to fill.
type TraceFields struct {
	TraceID           *string         `json:"trace_id"`
	OriginFunction    *string         `json:"origin_function"`
	Status            *string         `json:"status"`
	MemoryQuery       *string         `json:"memory_query"`
	MemoryContext     *string         `json:"memory_context"`
	MethodParams      json.RawMessage `json:"method_params"`
	MethodReturnValue json.RawMessage `json:"method_return_value"`
	ErrorMessage      *string         `json:"error_message"`
	SessionFeedback   *string         `json:"session_feedback"`
}

// NewTrace validates a trace step and encodes it as Cognee's
// append_agent_trace_step stores it: the nine fields in model order,
// trace_id/origin_function/status non-empty and stripped, the text fields
// stripped (default ""), every text field cut to MaxTraceText characters,
// method_params an object (default {}), method_params and
// method_return_value sanitised as Cognee does (SanitizeValue).
func NewTrace(f TraceFields, traceID string) ([]byte, error) {
	if f.TraceID != nil {
		traceID = *f.TraceID
	}
	required := []struct {
		name string
		val  *string
	}{{"trace_id", &traceID}, {"origin_function", f.OriginFunction}, {"status", f.Status}}
	vals := map[string][]byte{}
	for _, r := range required {
		if r.val == nil || pyStrip(*r.val) == "" {
			return nil, fieldErr(r.name, "must be a non-empty string")
		}
		vals[r.name] = AppendString(nil, traceText(*r.val))
	}
	for _, o := range []struct {
		name string
		val  *string
	}{{"memory_query", f.MemoryQuery}, {"memory_context", f.MemoryContext}, {"error_message", f.ErrorMessage}, {"session_feedback", f.SessionFeedback}} {
		s := ""
		if o.val != nil {
			s = traceText(*o.val)
		}
		vals[o.name] = AppendString(nil, s)
	}
	params := []byte("{}")
	if f.MethodParams != nil && !isNull(f.MethodParams) {
		if t := bytes.TrimSpace(f.MethodParams); len(t) == 0 || t[0] != '{' {
			return nil, fieldErr("method_params", "must be an object, not %s", describe(f.MethodParams))
		}
		p, err := SanitizeValue(f.MethodParams)
		if err != nil {
			return nil, fieldErr("method_params", "is not valid JSON")
		}
		params = p
	}
	vals["method_params"] = params
	ret := null
	if f.MethodReturnValue != nil {
		r, err := SanitizeValue(f.MethodReturnValue)
		if err != nil {
			return nil, fieldErr("method_return_value", "is not valid JSON")
		}
		ret = r
	}
	vals["method_return_value"] = ret
	return encodeOrdered(traceOrder, vals), nil
}

var traceOrder = []string{"trace_id", "origin_function", "status", "memory_query", "memory_context",
	"method_params", "method_return_value", "error_message", "session_feedback"}

func encodeOrdered(order []string, vals map[string][]byte) []byte {
	b := make([]byte, 0, 256)
	b = append(b, '{')
	for i, name := range order {
		b = appendKey(b, i == 0, name)
		if v, ok := vals[name]; ok {
			b = append(b, v...)
		} else {
			b = append(b, null...)
		}
	}
	return append(b, '}')
}

// NewContextEntry validates a session-context entry (any JSON object) and
// encodes it as json.dumps would. Its "id" must be a string; when absent,
// id is put first. It returns the encoded entry and its id.
func NewContextEntry(raw json.RawMessage, id string) ([]byte, string, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, "", fieldErr("", "a session-context entry must be a JSON object, not %s", describe(raw))
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(t, &probe); err != nil {
		return nil, "", fieldErr("", "a session-context entry must be a JSON object")
	}
	body, err := Transcode(t)
	if err != nil {
		return nil, "", fieldErr("", "a session-context entry must be valid JSON")
	}
	if v, ok := probe["id"]; ok {
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &id) != nil {
			return nil, "", fieldErr("id", "must be a string, not %s", describe(v))
		}
		return body, id, nil
	}
	b := AppendString([]byte(`{"id": `), id)
	if len(probe) > 0 {
		b = append(b, ',', ' ')
	}
	return append(b, body[1:]...), id, nil
}

// ContextPatch validates the fields merged into a session-context entry:
// any JSON object that does not change "id".
func ContextPatch(raw json.RawMessage) ([]byte, error) {
	t := bytes.TrimSpace(raw)
	var probe map[string]json.RawMessage
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &probe) != nil {
		return nil, fieldErr("", "the fields to merge must be a JSON object, not %s", describe(raw))
	}
	if len(probe) == 0 {
		return nil, fieldErr("", "none given: send at least one field to change")
	}
	if _, ok := probe["id"]; ok {
		return nil, fieldErr("id", "cannot be changed")
	}
	return Transcode(t)
}
