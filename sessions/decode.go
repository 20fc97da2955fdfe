package sessions

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// decodeBody reads r's JSON body into v: through quick when it takes the
// body, else through the full decoder, which also gives every error.
func decodeBody(r *http.Request, v any, quick func(body []byte) bool) error {
	body, err := sidecar.ReadJSON(r)
	if err != nil {
		return err
	}
	if quick(body) {
		return nil
	}
	return sidecar.DecodeJSONBytes(body, v)
}

// quick fills req from body without reflection when body is a plain append
// (sidecar.ObjectFields: known keys once each, an ASCII qa_id without
// escapes, no objects); false leaves req alone for the full decoder.
func (req *appendRequest) quick(body []byte) bool {
	var q appendRequest
	ok := sidecar.ObjectFields(body, func(key, raw []byte) bool {
		switch string(key) {
		case "qa_id":
			// an id is ASCII (sidecar.ValidID): other bytes, and invalid
			// UTF-8 (which the full decoder turns into U+FFFD), go there
			if q.QAID != nil || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 || !ascii(raw) {
				return false
			}
			id := string(raw[1 : len(raw)-1])
			q.QAID = &id
			return true
		case "question":
			return setRaw(&q.Question, raw)
		case "context":
			return setRaw(&q.Context, raw)
		case "answer":
			return setRaw(&q.Answer, raw)
		case "feedback_text":
			return setRaw(&q.FeedbackText, raw)
		case "feedback_score":
			return setRaw(&q.FeedbackScore, raw)
		case "used_graph_element_ids":
			return setRaw(&q.UsedGraphElementIDs, raw)
		case "memify_metadata":
			return setRaw(&q.MemifyMetadata, raw)
		case "used_session_context_ids":
			return setRaw(&q.UsedSessionContextIDs, raw)
		}
		return false
	})
	if ok {
		*req = q
	}
	return ok
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// quick is appendRequest.quick for PUT .../feedback.
func (req *feedbackRequest) quick(body []byte) bool {
	var q feedbackRequest
	ok := sidecar.ObjectFields(body, func(key, raw []byte) bool {
		switch string(key) {
		case "feedback_text":
			return setRaw(&q.FeedbackText, raw)
		case "feedback_score":
			return setRaw(&q.FeedbackScore, raw)
		}
		return false
	})
	if ok {
		*req = q
	}
	return ok
}

// setRaw sets a field the body names once; false for a second time.
func setRaw(dst *json.RawMessage, raw []byte) bool {
	if *dst != nil {
		return false
	}
	*dst = raw
	return true
}
