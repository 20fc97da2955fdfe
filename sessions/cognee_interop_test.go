package sessions_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// cogneePython runs testdata/cognee_adapter.py, a stand-in for Cognee's
// Redis session adapter on redis-py, against srv. It skips when Debian's
// python3-redis is missing, except in CI.
func cogneePython(t *testing.T, srv *redisstoretest.Server) func(cmd string, args any) string {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3-redis is missing for /usr/bin/python3 (apt-get install python3-redis)")
		}
		t.Skip("python3-redis not installed for /usr/bin/python3")
	}
	return func(cmd string, args any) string {
		t.Helper()
		a, _ := json.Marshal(args)
		out, err := exec.Command("/usr/bin/python3", "testdata/cognee_adapter.py", srv.URL(), cmd, "u1", "s1", string(a)).CombinedOutput()
		if err != nil {
			t.Fatalf("cognee %s %s: %v\n%s", cmd, a, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// Cognee (redis-py, its own read-modify-write paths) and the sidecar work on
// one session in turn, each reading and updating what the other wrote; every
// entry passes Cognee's model validation at every step.
func TestCogneeAndSidecarShareASession(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	cognee := cogneePython(t, srv)
	h := start(t, srv, nil)

	// Cognee writes; the sidecar reads it and sets feedback.
	cognee("create", map[string]string{"question": "Où est le chien ?", "answer": "Dans le jardin 🌳", "qa_id": "c1"})
	var list []entry
	h.Do(t, "GET", base+"/entries", "").JSON(t, &list)
	if len(list) != 1 || list[0].QAID != "c1" || list[0].Question != "Où est le chien ?" || list[0].Answer != "Dans le jardin 🌳" {
		t.Fatalf("sidecar reads Cognee's entry as %+v", list)
	}
	if r := h.Do(t, "PUT", base+"/entries/c1/feedback", `{"feedback_score":5,"feedback_text":"parfait"}`); r.Status != 200 {
		t.Fatalf("sidecar feedback on Cognee's entry: %d %s", r.Status, r.Body)
	}

	// The sidecar appends; Cognee reads both (validating them) and updates
	// the sidecar's entry its way (LRANGE, LSET).
	h.Do(t, "POST", base+"/entries", `{"question":"And the cat?","answer":"On the roof","qa_id":"s2","used_graph_element_ids":{"node_ids":["n1"]},"memify_metadata":{"feedback_weights_applied":false}}`)
	var seen []map[string]any
	if err := json.Unmarshal([]byte(cognee("all", nil)), &seen); err != nil || len(seen) != 2 {
		t.Fatalf("Cognee reads %v (%v)", seen, err)
	}
	if seen[0]["feedback_score"] != 5.0 || seen[0]["feedback_text"] != "parfait" || seen[1]["qa_id"] != "s2" {
		t.Fatalf("Cognee reads %v", seen)
	}
	if got := cognee("feedback", map[string]any{"qa_id": "s2", "score": 2}); got != "true" {
		t.Fatalf("Cognee feedback: %s", got)
	}
	r := h.Do(t, "GET", base+"/entries/s2", "")
	var e entry
	r.JSON(t, &e)
	if r.Status != 200 || e.FeedbackScore == nil || *e.FeedbackScore != 2 || e.MemifyMetadata["feedback_weights_applied"] != false {
		t.Fatalf("sidecar reads Cognee's update as %d %s", r.Status, r.Body)
	}

	// Cognee deletes its entry by rewriting the list; the sidecar still
	// finds the rest (its index notices the rewrite), appends again, and a
	// retried append of a qa_id Cognee wrote is recognised.
	if got := cognee("delete", map[string]string{"qa_id": "c1"}); got != "true" {
		t.Fatalf("Cognee delete: %s", got)
	}
	if r := h.Do(t, "GET", base+"/entries/c1", ""); r.Status != 404 {
		t.Fatalf("entry Cognee deleted: %d", r.Status)
	}
	if r := h.Do(t, "PUT", base+"/entries/s2/feedback", `{"feedback_score":4}`); r.Status != 200 {
		t.Fatalf("feedback after Cognee's rewrite: %d %s", r.Status, r.Body)
	}
	cognee("create", map[string]string{"question": "q3", "answer": "a3", "qa_id": "c3"})
	if r := h.Do(t, "POST", base+"/entries", `{"question":"retry","answer":"retry","qa_id":"c3"}`); r.Status != 200 {
		t.Fatalf("append of a qa_id Cognee wrote: %d, want 200 (already there)", r.Status)
	}
	h.Do(t, "POST", base+"/entries", `{"question":"q4","answer":"a4","qa_id":"s4"}`)
	if err := json.Unmarshal([]byte(cognee("all", nil)), &seen); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range seen {
		ids = append(ids, e["qa_id"].(string))
	}
	if strings.Join(ids, ",") != "s2,c3,s4" {
		t.Fatalf("Cognee sees %v, want s2,c3,s4", ids)
	}
	if seen[0]["feedback_score"] != 4.0 {
		t.Fatalf("Cognee reads the sidecar's feedback as %v", seen[0]["feedback_score"])
	}
}

// memify_metadata takes booleans only (Cognee's Dict[str, bool]): a detail
// object is a 400 naming the field and nothing is stored, so Cognee's
// model-validating read of the whole session keeps working.
func TestMemifyDetailObjectsAreRefused(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	cognee := cogneePython(t, srv)
	h := start(t, srv, nil)
	cognee("create", map[string]string{"question": "q", "answer": "a", "qa_id": "c1"})
	h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"s1","memify_metadata":{"feedback_weights_applied":true}}`)
	before := lrange(t, srv.Client(t), keys.Entries)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", base + "/entries", `{"question":"q","answer":"a","qa_id":"s2","memify_metadata":{"session_persistence":{"applied":["n1"]}}}`},
		{"PATCH", base + "/entries/s1", `{"memify_metadata":{"session_persistence":{"applied":["n1"]}}}`},
		{"PATCH", base + "/entries/c1", `{"memify_metadata":{"x":"true"}}`},
		{"PATCH", base + "/entries/c1", `{"memify_metadata":{"x":1}}`},
	} {
		r := h.Do(t, tc.method, tc.path, tc.body)
		if r.Status != 400 || r.Code() != "invalid_field" || !strings.Contains(r.Body, "memify_metadata") {
			t.Errorf("%s %s %s: %d %s, want 400 naming memify_metadata", tc.method, tc.path, tc.body, r.Status, r.Body)
		}
	}
	if got := lrange(t, srv.Client(t), keys.Entries); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Fatalf("refused calls changed the list:\n%q\nwas\n%q", got, before)
	}
	if r := h.Do(t, "PATCH", base+"/entries/c1", `{"memify_metadata":{"session_persisted":true}}`); r.Status != 200 {
		t.Fatalf("boolean memify on Cognee's entry: %d %s", r.Status, r.Body)
	}
	var seen []map[string]any
	if err := json.Unmarshal([]byte(cognee("all", nil)), &seen); err != nil || len(seen) != 2 {
		t.Fatalf("Cognee reads %v (%v)", seen, err)
	}
}
