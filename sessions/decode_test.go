package sessions

import (
	"reflect"
	"testing"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// TestQuickAppendDecode: the quick path decodes a body exactly as the full
// decoder does, and leaves to it every body it is not sure of.
func TestQuickAppendDecode(t *testing.T) {
	for _, tc := range []struct {
		body  string
		quick bool // taken by the quick path
	}{
		{`{"question": "q", "answer": "a"}`, true},
		{` { "qa_id" : "id-1" , "question":"q","context":"c","answer":"a","feedback_text":null,"feedback_score":3,"used_session_context_ids":["x","y\"z"]} `, true},
		{`{"question": "caf\u00e9", "answer": "a\nb"}`, true},
		{`{}`, true},
		{`{"question": "q", "answer": "a", "used_graph_element_ids": {"node_ids": ["n"]}}`, false},
		{`{"question": "q", "answer": "a", "memify_metadata": {"x": true}}`, false},
		{`{"question": "q", "question": "r", "answer": "a"}`, false},
		{`{"Question": "q", "answer": "a"}`, false},
		{`{"question": "q", "answer": "a", "extra": 1}`, false},
		{`{"qa_id": "a\u0062", "question": "q", "answer": "a"}`, false},
		{`{"qa_id": null, "question": "q", "answer": "a"}`, false},
		{`{"qa_id": 5, "question": "q", "answer": "a"}`, false},
		{`{"q\u0075estion": "q", "answer": "a"}`, false},
		{`{"question": "q", "answer": "a"} {}`, false},
		{`{"question": "q", "answer": "a",}`, false},
		{`[1]`, false},
		{``, false},
		{`{"question": [["x"]], "answer": "a"}`, false},
		{`{"question": 1.5e3, "answer": true}`, true},
	} {
		var got appendRequest
		quick := got.quick([]byte(tc.body))
		if quick != tc.quick {
			t.Errorf("quick(%s) = %v, want %v", tc.body, quick, tc.quick)
		}
		if !quick {
			continue
		}
		var want appendRequest
		if err := sidecar.DecodeJSONBytes([]byte(tc.body), &want); err != nil {
			t.Errorf("quick path took %s, which the decoder refuses: %v", tc.body, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("quick(%s) = %+v, want %+v", tc.body, got, want)
		}
	}
}

// TestQuickFeedbackDecode: the same for PUT .../feedback bodies.
func TestQuickFeedbackDecode(t *testing.T) {
	for _, tc := range []struct {
		body  string
		quick bool
	}{
		{`{"feedback_score": 4}`, true},
		{`{"feedback_text": "good", "feedback_score": null}`, true},
		{`{"feedback_text": "a\"b"}`, true},
		{`{}`, true},
		{`{"feedback_score": 4, "feedback_score": 5}`, false},
		{`{"feedback_text": "x", "question": "q"}`, false},
		{`{"feedback_text": {"a": 1}}`, false},
		{`{"Feedback_text": "x"}`, false},
		{`{"feedback_score": 04}`, false},
	} {
		var got feedbackRequest
		quick := got.quick([]byte(tc.body))
		if quick != tc.quick {
			t.Errorf("quick(%s) = %v, want %v", tc.body, quick, tc.quick)
		}
		if !quick {
			if !reflect.DeepEqual(got, feedbackRequest{}) {
				t.Errorf("quick(%s) refused the body but filled %+v", tc.body, got)
			}
			continue
		}
		var want feedbackRequest
		if err := sidecar.DecodeJSONBytes([]byte(tc.body), &want); err != nil {
			t.Errorf("quick path took %s, which the decoder refuses: %v", tc.body, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("quick(%s) = %+v, want %+v", tc.body, got, want)
		}
	}
}

// FuzzQuickAppendDecode: whatever body the quick paths take, the full
// decoder takes too, with the same result.
func FuzzQuickAppendDecode(f *testing.F) {
	for _, s := range []string{`{"question": "q", "answer": "a"}`, `{"qa_id":"x","feedback_score":null,"used_session_context_ids":["a"]}`, `{"question":"\"","answer":[]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var got appendRequest
		if !got.quick([]byte(body)) {
			return
		}
		var want appendRequest
		if err := sidecar.DecodeJSONBytes([]byte(body), &want); err != nil {
			t.Fatalf("quick path took %q, which the decoder refuses: %v", body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("quick(%q) = %+v, want %+v", body, got, want)
		}
		var fb, fbWant feedbackRequest
		if !fb.quick([]byte(body)) {
			return
		}
		if err := sidecar.DecodeJSONBytes([]byte(body), &fbWant); err != nil {
			t.Fatalf("feedback quick path took %q, which the decoder refuses: %v", body, err)
		}
		if !reflect.DeepEqual(fb, fbWant) {
			t.Fatalf("feedback quick(%q) = %+v, want %+v", body, fb, fbWant)
		}
	})
}

// BenchmarkAppendDecode: an append's body through the quick path and
// through the full decoder it replaces.
func BenchmarkAppendDecode(b *testing.B) {
	body := []byte(`{"qa_id": "q-000123", "question": "What is the capital of France, and why did it become the capital?", "context": "Paris has been the seat of French kings since the Capetians; the graph holds 12 facts about it.", "answer": "Paris. It grew around the Ile de la Cite, was the Capetian seat from 987 and kept the court and administration thereafter.", "used_session_context_ids": ["c1", "c2"]}`)
	b.Run("quick", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req appendRequest
			if !req.quick(body) {
				b.Fatal("not quick")
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req appendRequest
			if err := sidecar.DecodeJSONBytes(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
