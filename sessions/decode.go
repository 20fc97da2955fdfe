package sessions

import (
	"bytes"
	"encoding/json"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// quick fills req from body without reflection when body is a plain append
// (sidecar.ObjectFields: known keys once each, a qa_id without escapes, no
// objects); false sends it through the full decoder, which also gives
// every error message.
func (req *appendRequest) quick(body []byte) bool {
	return sidecar.ObjectFields(body, func(key, raw []byte) bool {
		var dst *json.RawMessage
		switch string(key) {
		case "qa_id":
			if req.QAID != nil || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
				return false
			}
			id := string(raw[1 : len(raw)-1])
			req.QAID = &id
			return true
		case "question":
			dst = &req.Question
		case "context":
			dst = &req.Context
		case "answer":
			dst = &req.Answer
		case "feedback_text":
			dst = &req.FeedbackText
		case "feedback_score":
			dst = &req.FeedbackScore
		case "used_graph_element_ids":
			dst = &req.UsedGraphElementIDs
		case "memify_metadata":
			dst = &req.MemifyMetadata
		case "used_session_context_ids":
			dst = &req.UsedSessionContextIDs
		default:
			return false
		}
		if *dst != nil {
			return false
		}
		*dst = raw
		return true
	})
}
