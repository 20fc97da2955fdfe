package sessions_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A bad append answers its first problem in field order (question, context,
// answer, then the rest), and an unknown field lists the accepted ones.
func TestAppendAnswersTheFirstProblem(t *testing.T) {
	h := start(t, redisstoretest.New(t), nil)
	tests := []struct {
		name, body, code, message string
	}{
		{"question of the wrong type, no answer", `{"question":5}`, "invalid_field", `field "question" must be a string, not the number 5`},
		{"context of the wrong type, no answer", `{"question":"q","context":5}`, "invalid_field", `field "context" must be a string, not the number 5`},
		{"no question", `{"answer":"a"}`, "invalid_field", `field "question" is required`},
		{"no answer", `{"question":"q"}`, "invalid_field", `field "answer" is required`},
		{"unknown field", `{"question":"q","answer":"a","mood":"happy"}`, "unknown_field",
			`unknown field "mood"; accepted fields: qa_id, question, context, answer, feedback_text, feedback_score, used_graph_element_ids, memify_metadata, used_session_context_ids`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Do(t, "POST", base+"/entries", tc.body)
			var env struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			r.JSON(t, &env)
			if r.Status != 400 || env.Error.Code != tc.code || env.Error.Message != tc.message {
				t.Fatalf("got %d %s, want 400 %s: %s", r.Status, r.Body, tc.code, tc.message)
			}
		})
	}
}
