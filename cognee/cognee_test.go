package cognee_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/cognee"
)

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The fixtures under testdata/cognee_*.json are what Cognee's Redis adapter
// writes (json.dumps of model_dump(): ", " and ": " separators, ASCII-only
// strings, bare NaN/Infinity, naive UTC time); sidecar_qa_entry.golden is
// what the sidecar must write for the same kind of input.
func TestNewQAEntryMatchesGolden(t *testing.T) {
	now := time.Date(2026, 11, 21, 23, 15, 37, 123456789, time.UTC)
	f := cognee.QAFields{
		Question:              json.RawMessage(`"Qu'est-ce que ça coûte ? 😀 </script> <b>&amp;</b>"`),
		Context:               json.RawMessage(`"line1\nline2\t\"quoted\" \\ back\/slash \u007f\u0001"`),
		Answer:                json.RawMessage(`"Deux €"`),
		FeedbackScore:         json.RawMessage(`4`),
		UsedGraphElementIDs:   json.RawMessage(`{"edge_ids": [], "node_ids": ["n-1","n-2"]}`),
		MemifyMetadata:        json.RawMessage(`{"feedback_weights_applied":false,"d\u00e9tail":true}`),
		UsedSessionContextIDs: json.RawMessage(`[]`),
	}
	got, err := cognee.NewQAEntry(f, "q-1", now)
	if err != nil {
		t.Fatal(err)
	}
	if want := readFixture(t, "sidecar_qa_entry.golden"); string(got) != want {
		t.Fatalf("entry bytes differ from Python's json.dumps\n got: %s\nwant: %s", got, want)
	}
}

func TestPythonReadsWhatWeWrite(t *testing.T) {
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("no /usr/bin/python3")
	}
	golden := readFixture(t, "sidecar_qa_entry.golden")
	// json.loads, then the checks of Cognee's SessionQAEntry validators, then
	// json.dumps must give back the same bytes.
	script := `
import json, sys
raw = sys.stdin.read()
e = json.loads(raw)
assert list(e) == ["time","question","context","answer","qa_id","feedback_text","feedback_score","used_graph_element_ids","memify_metadata","used_session_context_ids"], list(e)
for k in ("time","question","context","answer"): assert isinstance(e[k], str), k
assert e["feedback_score"] is None or (type(e["feedback_score"]) is int and 1 <= e["feedback_score"] <= 5)
g = e["used_graph_element_ids"]
assert g is None or (set(g) <= {"node_ids","edge_ids"} and all(isinstance(x, str) for v in g.values() for x in v))
m = e["memify_metadata"]
assert m is None or all(isinstance(v, bool) for v in m.values())
assert json.dumps(e) == raw, "json.dumps does not give back the stored bytes"
from datetime import datetime
datetime.fromisoformat(e["time"])
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(golden)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Python rejects the stored entry: %v\n%s", err, out)
	}
}

func TestAppendStringAsPython(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`a"b\c/d`, `"a\"b\\c/d"`},
		{"\n\r\t\b\f", `"\n\r\t\b\f"`},
		{"\x00\x1f\x7f", `"\u0000\u001f\u007f"`},
		{"é€", `"\u00e9\u20ac"`},
		{"😀", `"\ud83d\ude00"`},
		{"<>&", `"<>&"`},
		{"\xff", `"\ufffd"`},
	}
	for _, tc := range tests {
		if got := string(cognee.AppendString(nil, tc.in)); got != tc.want {
			t.Errorf("AppendString(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestTranscodeKeepsOrderAndNumbers(t *testing.T) {
	got, err := cognee.Transcode([]byte(`{"z":1,"a":[1.50,-2e3,{"é":null}],"m":{},"t":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"z": 1, "a": [1.50, -2e3, {"\u00e9": null}], "m": {}, "t": true}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestStrictReadsCogneeFixtures(t *testing.T) {
	for _, name := range []string{"cognee_qa_entry.json", "cognee_qa_entry_old.json", "cognee_trace.json", "cognee_context.json"} {
		t.Run(name, func(t *testing.T) {
			raw := readFixture(t, name)
			strict, err := cognee.Strict([]byte(raw))
			if err != nil {
				t.Fatalf("Strict: %v", err)
			}
			var v map[string]any
			if err := json.Unmarshal(strict, &v); err != nil {
				t.Fatalf("not strict JSON: %v\n%s", err, strict)
			}
		})
	}
	strict, _ := cognee.Strict([]byte(readFixture(t, "cognee_trace.json")))
	var trace struct {
		MethodParams struct {
			Threshold any   `json:"threshold"`
			Weights   []any `json:"weights"`
		} `json:"method_params"`
		MethodReturnValue any    `json:"method_return_value"`
		MemoryQuery       string `json:"memory_query"`
		ErrorMessage      string `json:"error_message"`
	}
	if err := json.Unmarshal(strict, &trace); err != nil {
		t.Fatal(err)
	}
	if trace.MethodParams.Threshold != nil || trace.MethodReturnValue != nil ||
		len(trace.MethodParams.Weights) != 3 || trace.MethodParams.Weights[0] != 1.5 ||
		trace.MethodParams.Weights[1] != nil || trace.MethodParams.Weights[2] != nil {
		t.Fatalf("NaN/Infinity not mapped to null: %s", strict)
	}
	if trace.MemoryQuery != "where is été" || trace.ErrorMessage != "timeout after 1e-05 s" {
		t.Fatalf("text changed: %q %q", trace.MemoryQuery, trace.ErrorMessage)
	}
	// A string holding the letters NaN is text, not a number.
	s, err := cognee.Strict([]byte(`{"q": "NaN and Infinity", "n": NaN}`))
	if err != nil || string(s) != `{"q": "NaN and Infinity", "n": null}` {
		t.Fatalf("got %s %v", s, err)
	}
	if _, err := cognee.Strict([]byte(`{"broken": `)); err == nil {
		t.Fatal("truncated JSON accepted")
	}
}

func TestQAValidationAsCogneesModel(t *testing.T) {
	ok := func(f cognee.QAFields) cognee.QAFields {
		f.Question, f.Answer = json.RawMessage(`"q"`), json.RawMessage(`"a"`)
		return f
	}
	tests := []struct {
		name string
		f    cognee.QAFields
		want string // "" = valid; else the field named in the error
	}{
		{"minimal", ok(cognee.QAFields{}), ""},
		{"no question", cognee.QAFields{Answer: json.RawMessage(`"a"`)}, "question"},
		{"no answer", cognee.QAFields{Question: json.RawMessage(`"q"`)}, "answer"},
		{"question null", cognee.QAFields{Question: json.RawMessage(`null`), Answer: json.RawMessage(`"a"`)}, "question"},
		{"question number", cognee.QAFields{Question: json.RawMessage(`5`), Answer: json.RawMessage(`"a"`)}, "question"},
		{"score 0", ok(cognee.QAFields{FeedbackScore: json.RawMessage(`0`)}), "feedback_score"},
		{"score 6", ok(cognee.QAFields{FeedbackScore: json.RawMessage(`6`)}), "feedback_score"},
		{"score 4.5", ok(cognee.QAFields{FeedbackScore: json.RawMessage(`4.5`)}), "feedback_score"},
		{"score string", ok(cognee.QAFields{FeedbackScore: json.RawMessage(`"5"`)}), "feedback_score"},
		{"score null", ok(cognee.QAFields{FeedbackScore: json.RawMessage(`null`)}), ""},
		{"graph other key", ok(cognee.QAFields{UsedGraphElementIDs: json.RawMessage(`{"node_ids":[],"chunk_ids":[]}`)}), "used_graph_element_ids"},
		{"graph not list", ok(cognee.QAFields{UsedGraphElementIDs: json.RawMessage(`{"node_ids":"n1"}`)}), "used_graph_element_ids"},
		{"graph number in list", ok(cognee.QAFields{UsedGraphElementIDs: json.RawMessage(`{"node_ids":[1]}`)}), "used_graph_element_ids"},
		{"graph null in list", ok(cognee.QAFields{UsedGraphElementIDs: json.RawMessage(`{"edge_ids":[null]}`)}), "used_graph_element_ids"},
		{"graph array", ok(cognee.QAFields{UsedGraphElementIDs: json.RawMessage(`["n1"]`)}), "used_graph_element_ids"},
		{"memify string value", ok(cognee.QAFields{MemifyMetadata: json.RawMessage(`{"x":"yes"}`)}), "memify_metadata"},
		{"memify number value", ok(cognee.QAFields{MemifyMetadata: json.RawMessage(`{"x":1}`)}), "memify_metadata"},
		{"memify list", ok(cognee.QAFields{MemifyMetadata: json.RawMessage(`[true]`)}), "memify_metadata"},
		{"memify detail object", ok(cognee.QAFields{MemifyMetadata: json.RawMessage(`{"session_persistence":{"applied":["n1"]}}`)}), "memify_metadata"},
		{"memify null value", ok(cognee.QAFields{MemifyMetadata: json.RawMessage(`{"x":null}`)}), "memify_metadata"},
		{"memify booleans", ok(cognee.QAFields{MemifyMetadata: json.RawMessage(`{"x":true,"y":false}`)}), ""},
		{"context ids number", ok(cognee.QAFields{UsedSessionContextIDs: json.RawMessage(`[1]`)}), "used_session_context_ids"},
		{"context ids object", ok(cognee.QAFields{UsedSessionContextIDs: json.RawMessage(`{}`)}), "used_session_context_ids"},
		{"context ids null element", ok(cognee.QAFields{UsedSessionContextIDs: json.RawMessage(`["a",null]`)}), "used_session_context_ids"},
		{"feedback text number", ok(cognee.QAFields{FeedbackText: json.RawMessage(`3`)}), "feedback_text"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cognee.NewQAEntry(tc.f, "id", time.Now())
			var fe *cognee.FieldError
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tc.want != "" && (err == nil || !asField(err, &fe) || fe.Field != tc.want):
				t.Fatalf("got %v, want an error on %s", err, tc.want)
			}
		})
	}
}

func asField(err error, fe **cognee.FieldError) bool {
	e, ok := err.(*cognee.FieldError)
	*fe = e
	return ok
}

func TestEmptyContainersStoredAsNull(t *testing.T) {
	got, err := cognee.NewQAEntry(cognee.QAFields{
		Question: json.RawMessage(`"q"`), Answer: json.RawMessage(`"a"`),
		UsedGraphElementIDs: json.RawMessage(`{}`), MemifyMetadata: json.RawMessage(`{}`), UsedSessionContextIDs: json.RawMessage(`[]`),
	}, "id", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"time": "2026-01-02T03:04:05+00:00", "question": "q", "context": "", "answer": "a", "qa_id": "id", "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestNewTraceAsCognee(t *testing.T) {
	s := func(v string) *string { return &v }
	got, err := cognee.NewTrace(cognee.TraceFields{
		OriginFunction: s("  search  "), Status: s("ok"), MemoryQuery: s(" q "),
		MethodParams: json.RawMessage(`{"k":[],"x":1.0}`), MethodReturnValue: json.RawMessage(`["r"]`),
	}, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"trace_id": "t-1", "origin_function": "search", "status": "ok", "memory_query": "q", "memory_context": "", "method_params": {"k": [], "x": 1.0}, "method_return_value": ["r"], "error_message": "", "session_feedback": ""}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	for _, bad := range []cognee.TraceFields{
		{Status: s("ok")},
		{OriginFunction: s(" "), Status: s("ok")},
		{OriginFunction: s("f"), Status: s("ok"), MethodParams: json.RawMessage(`[1]`)},
	} {
		if _, err := cognee.NewTrace(bad, "t"); err == nil {
			t.Errorf("NewTrace(%+v) accepted", bad)
		}
	}
}

func TestPythonTime(t *testing.T) {
	tests := []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 11, 21, 23, 15, 37, 123456000, time.UTC), "2026-11-21T23:15:37.123456+00:00"},
		{time.Date(2026, 11, 21, 23, 15, 37, 0, time.UTC), "2026-11-21T23:15:37+00:00"},
		{time.Date(2026, 11, 21, 23, 15, 37, 999, time.UTC), "2026-11-21T23:15:37+00:00"},
		{time.Date(2026, 11, 22, 0, 15, 37, 5000, time.FixedZone("CET", 3600)), "2026-11-21T23:15:37.000005+00:00"},
	}
	for _, tc := range tests {
		if got := cognee.PythonTime(tc.t); got != tc.want {
			t.Errorf("PythonTime(%v) = %s, want %s", tc.t, got, tc.want)
		}
	}
}

func TestNewIDIsUUID4(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := cognee.NewID()
		if len(id) != 36 || id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) || seen[id] {
			t.Fatalf("bad or repeated id %s", id)
		}
		seen[id] = true
	}
}
