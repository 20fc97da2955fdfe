package cognee_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/cognee"
)

func TestTruncateTextBoundaries(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{strings.Repeat("a", 1000), strings.Repeat("a", 1000)},
		{strings.Repeat("a", 1001), strings.Repeat("a", 997) + "..."},
		{strings.Repeat("é", 1000), strings.Repeat("é", 1000)}, // 2000 bytes, 1000 characters
		{strings.Repeat("é", 1001), strings.Repeat("é", 997) + "..."},
		{strings.Repeat("😀", 1001), strings.Repeat("😀", 997) + "..."},
		{"", ""},
	} {
		if got := cognee.TruncateText(tc.in, cognee.MaxTraceText); got != tc.want {
			t.Errorf("TruncateText(%d bytes) = %d bytes %q..., want %d bytes", len(tc.in), len(got), got[:min(len(got), 8)], len(tc.want))
		}
	}
}

func TestSanitizeValueAsCognee(t *testing.T) {
	list := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(i)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	dumpList := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(i)
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	obj := func(n int, sep string) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf(`"k%02d":%s%d`, i, sep, i)
		}
		return "{" + strings.Join(s, ","+sep) + "}"
	}
	dumpObj := obj(20, " ") // json.dumps's layout
	long := strings.Repeat("x", 1001)
	cut := strings.Repeat("x", 997) + "..."
	for _, tc := range []struct{ in, want string }{
		{list(20), dumpList(20)},
		{list(21), dumpList(20)},
		{obj(20, ""), dumpObj},
		{obj(21, ""), dumpObj},
		{`"` + long + `"`, `"` + cut + `"`},
		{`{"a":[{"b":"` + long + `","c":` + list(25) + `}]}`, `{"a": [{"b": "` + cut + `", "c": ` + dumpList(20) + `}]}`},
		// keys are cut too; a cut key equal to an earlier one gets a suffix
		{`{"` + long + `":1,"` + cut + `":2,"` + strings.Repeat("x", 1002) + `":3}`, `{"` + cut + `": 1, "` + cut + `_2": 2, "` + cut + `_3": 3}`},
		{`[true,false,null,"\u00e9/"]`, `[true, false, null, "\u00e9/"]`},
		// numbers as json.dumps writes what json.loads read
		{`[1.50,-0,0,-0.0,1e5,1E+2,12345678901234567890123,1e16,1e15,0.0001,0.00001,1.5e-7,123.456e2,1e400,-1e400,0.1]`,
			`[1.5, 0, 0, -0.0, 100000.0, 100.0, 12345678901234567890123, 1e+16, 1000000000000000.0, 0.0001, 1e-05, 1.5e-07, 12345.6, Infinity, -Infinity, 0.1]`},
		{list(20)[:len(list(20))-1] + `,{"x":` + list(30) + `}]`, dumpList(20)},
	} {
		got, err := cognee.SanitizeValue([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("SanitizeValue(%.60s...)\n got %.200s (%v)\nwant %.200s", tc.in, got, err, tc.want)
		}
	}
}

// A trace step stores what Cognee's SessionAgentTraceEntry would: text fields
// stripped and cut to 1000 characters, parameters and return value
// sanitised.
func TestNewTraceAppliesCogneesLimits(t *testing.T) {
	s := func(v string) *string { return &v }
	long := strings.Repeat("é", 1001)
	cut := strings.Repeat(`\u00e9`, 997) + "..."
	params := `{"q":"` + long + `","ids":` + "[" + strings.Repeat(`"n",`, 24) + `"n"]}`
	got, err := cognee.NewTrace(cognee.TraceFields{
		TraceID: s("  t1 \x1c"), OriginFunction: s(long), Status: s(" ok "),
		MemoryQuery: s(strings.Repeat("q", 1000)), MemoryContext: s("\n" + long + "\n"),
		MethodParams: json.RawMessage(params), MethodReturnValue: json.RawMessage(`"` + long + `"`),
		ErrorMessage: s(" " + strings.Repeat("e", 1001)), SessionFeedback: s(""),
	}, "unused")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"trace_id": "t1", "origin_function": "` + cut + `", "status": "ok", "memory_query": "` + strings.Repeat("q", 1000) +
		`", "memory_context": "` + cut + `", "method_params": {"q": "` + cut + `", "ids": [` + strings.TrimSuffix(strings.Repeat(`"n", `, 20), ", ") +
		`]}, "method_return_value": "` + cut + `", "error_message": "` + strings.Repeat("e", 997) + `...", "session_feedback": ""}`
	if string(got) != want {
		t.Fatalf("stored\n %s\nwant\n %s", got, want)
	}
	if _, err := cognee.NewTrace(cognee.TraceFields{OriginFunction: s("\x1f \x1e"), Status: s("ok")}, "t"); err == nil {
		t.Fatal("an origin_function of Python whitespace was accepted")
	}
}

// Whatever valid JSON comes in, the sanitised value is JSON (Python's, with
// Infinity for a number too large for a float) within Cognee's limits at
// every depth.
func FuzzSanitizeValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"c"}]}`, `"x"`, `[` + strings.Repeat(`"é",`, 30) + `1]`, `{"` + strings.Repeat("k", 1005) + `":null}`, `1e400`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		got, err := cognee.SanitizeValue([]byte(in))
		if err == nil {
			got, err = cognee.Strict(got) // json.dumps's Infinity, as readers get it
		}
		if err != nil {
			t.Fatalf("SanitizeValue(%q) = %q, %v", in, got, err)
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(string(got)))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil || !withinLimits(v) {
			t.Fatalf("SanitizeValue(%q) = %q: over Cognee's limits (%v)", in, got, err)
		}
	})
}

func withinLimits(v any) bool {
	switch v := v.(type) {
	case string:
		return utf8.RuneCountInString(v) <= cognee.MaxTraceText
	case []any:
		if len(v) > cognee.MaxTraceItems {
			return false
		}
		for _, e := range v {
			if !withinLimits(e) {
				return false
			}
		}
	case map[string]any:
		if len(v) > cognee.MaxTraceItems {
			return false
		}
		for k, e := range v {
			if utf8.RuneCountInString(k) > cognee.MaxTraceText || !withinLimits(e) {
				return false
			}
		}
	}
	return true
}

func TestCheckQAEntryAsCogneesModel(t *testing.T) {
	golden := readFixture(t, "sidecar_qa_entry.golden")
	if err := cognee.CheckQAEntry([]byte(golden)); err != nil {
		t.Fatalf("the sidecar's golden entry: %v", err)
	}
	if err := cognee.CheckQAEntry([]byte(readFixture(t, "cognee_qa_entry_old.json"))); err != nil {
		t.Fatalf("an older Cognee's entry: %v", err)
	}
	for _, tc := range []struct{ from, to, field string }{
		{`"memify_metadata": {"feedback_weights_applied": false, "d\u00e9tail": true}`, `"memify_metadata": {"x": {"applied": []}}`, "memify_metadata"},
		{`"memify_metadata": {"feedback_weights_applied": false, "d\u00e9tail": true}`, `"memify_metadata": {"x": truefalse}`, ""},
		{`"feedback_score": 4`, `"feedback_score": 6`, "feedback_score"},
		{`"feedback_score": 4`, `"feedback_score": 4.0`, "feedback_score"},
		{`"question": "Qu'est`, `"question": 5, "x": "`, "question"},
		{`"time": "2026-11-21T23:15:37.123456+00:00"`, `"time": "yesterday"`, "time"},
		{`"edge_ids": []`, `"chunk_ids": []`, "used_graph_element_ids"},
		{`"used_session_context_ids": null`, `"used_session_context_ids": [1]`, "used_session_context_ids"},
	} {
		bad := strings.Replace(golden, tc.from, tc.to, 1)
		if bad == golden {
			t.Fatalf("fixture lacks %s", tc.from)
		}
		err := cognee.CheckQAEntry([]byte(bad))
		var fe *cognee.FieldError
		if err == nil || !asField(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want an error on %q", tc.to, err, tc.field)
		}
	}
}

// Numbers in a trace are stored as Python's json.dumps(json.loads(x))
// writes them: checked against Python itself on random literals.
func TestSanitizedNumbersAsPython(t *testing.T) {
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("no /usr/bin/python3")
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	var lits []string
	for range 3000 {
		var lit string
		switch rnd.IntN(4) {
		case 0:
			lit = strconv.FormatFloat(rnd.NormFloat64()*math.Pow(10, float64(rnd.IntN(40)-20)), 'g', -1, 64)
		case 1:
			lit = fmt.Sprintf("%d.%de%d", rnd.IntN(1000)-500, rnd.IntN(1000), rnd.IntN(700)-350)
		case 2:
			lit = strconv.FormatFloat(float64(rnd.IntN(1<<20))/float64(1+rnd.IntN(1000)), 'f', rnd.IntN(12), 64)
		default:
			lit = fmt.Sprintf("%d", rnd.Int64()-rnd.Int64())
		}
		lits = append(lits, lit)
	}
	cmd := exec.Command(py, "-c", "import json,sys\nfor l in sys.stdin: print(json.dumps(json.loads(l)))")
	cmd.Stdin = strings.NewReader(strings.Join(lits, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, lit := range lits {
		got, err := cognee.SanitizeValue([]byte(lit))
		if err != nil || string(got) != want[i] {
			t.Errorf("%s: got %s (%v), Python writes %s", lit, got, err, want[i])
		}
	}
}
