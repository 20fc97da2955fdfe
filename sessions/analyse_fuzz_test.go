package sessions

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/cognee"
)

// A Q&A entry's search document is the same whichever path reads it: the
// decoder-free one (a flat entry, every append) or the decoder (Cognee's
// NaN, nested objects, escapes), and the same for one entry written by the
// sidecar or by Cognee's json.dumps. Seeds, a raw fuzzer, a fuzzer of
// values inside entry frames, and one of encodings.

var analyseSeeds = []string{
	`{"question": "Where is the café?", "context": "", "answer": "Zürich", "qa_id": "q"}`,
	`{"question": "Where is the caf\u00e9?", "answer": "Z\u00fcrich \"old town\""}`,
	`{"question": "dup", "question": "second wins", "answer": null}`,
	`{"question": "x", "feedback_score": NaN, "answer": "nan entries go the slow way"}`,
	`{"question": "nested", "memify_metadata": {"a": 1}, "answer": "object elsewhere"}`,
	"{\"question\": \"bad \xf4 utf8\", \"answer\": \"ok\"}",
	`{"question": 5, "context": ["a"], "answer": true}`,
	`["not", "an", "object"]`, `not json`, `{}`, `null`, `""`, ``, ` `, `{`, `{"question"`,
	`{"question": "\ud83e\udd8a fox", "answer": "\ud800 lone", "context": "\udc00\ud800"}`,
	`{"question": "\ud83e", "answer": "x\udd8a"}`,
	"{\"question\": \"raw\x01ctl\", \"answer\": \"a\"}",
	"{\"question\": \"raw\ttab\", \"answer\": \"a\"}",
	`{"question": "a", "qu\u0065stion": "b", "answer": "c"}`,
	`{"qu\u0065stion": "b", "question": "a", "answer": "c"}`,
	`{"question": "a", "Question": "b", "ANSWER": "c"}`,
	` { "question" : "a" , "answer" : "b" } `,
	"\t\r\n{\"question\"\n:\r\"a\"\t,\"answer\":\"b\"}\n",
	`{"question": ["a", "b"], "answer": [], "context": [1e400]}`,
	`{"question": 1e400, "answer": -0.0e-999, "context": "c"}`,
	`{"question": "", "answer": "", "context": ""}`,
	`{"question": null, "answer": null, "context": null}`,
	`{"question": "a", "answer": "b", "x": [["nested"]]}`,
	`{"question": "a", "answer": "b", "x": [{"o": 1}]}`,
	`{"question": "a", "answer": "b", "x": "[{"}`,
	`{"question": "a", "answer": "b", "x": ["]\"[{"]}`,
	`{"question": "a", "answer": "b"} trailing`,
	`{"question": "a", "answer": "b"}{}`,
	`{"question": "Infinity", "answer": "-Infinity NaN"}`,
	`{"question": "a", "answer": "b", "s": -Infinity}`,
	`{"question": "a", "answer": Infinity}`,
	`{"question": "a\/b\u0000c\\d", "answer": "\b\f\n\r\t"}`,
	"{\"question\": \"\xed\xa0\x80 encoded surrogate\", \"answer\": \"\xef\xbf\xbd\"}",
	"{\"question\xff\": \"a\", \"answer\": \"b\"}",
	"\xef\xbb\xbf{\"question\": \"bom\", \"answer\": \"b\"}",
	`{"question": "a", "answer": "b", "": ""}`,
	`{"question":"a","answer":"b","question":5}`,
	`{"question":"a","answer":"b","question":{"x":1}}`,
	`{"question":"\u2028\u2029 sep", "answer":"` + "\u2028" + `"}`,
}

func checkAnalyse(t *testing.T, in []byte) {
	t.Helper()
	got, want := analyseEntry(in), analyseSlow(in)
	if got != want {
		t.Fatalf("%q:\n fast %+v\n slow %+v", in, got, want)
	}
}

func FuzzAnalyseEntryPaths(f *testing.F) {
	for _, s := range analyseSeeds {
		f.Add([]byte(s))
	}
	if e, err := cognee.NewQAEntry(cognee.QAFields{Question: json.RawMessage(`"\u00e9moji \ud83e\udd8a\there"`), Answer: json.RawMessage(`"ok"`)}, "q1", time.Unix(0, 0)); err == nil {
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkAnalyse(t, in) })
}

// The fuzzed bytes are spliced in as a field's raw value / key, so the
// mutator works on string contents inside a valid frame.
func FuzzAnalyseEntryFramed(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u00e9\ud83e\udd8a"`, `"\ud800"`, `null`, `1e400`, `["x"]`, `"x\"y"`, "\"\xff\"", `"` + strings.Repeat("word ", 50) + `"`} {
		f.Add([]byte(s), "question", uint8(0))
	}
	f.Fuzz(func(t *testing.T, v []byte, key string, mode uint8) {
		var frames = []string{
			`{"question": %s, "context": "", "answer": "ok"}`,
			`{"%[2]s": %[1]s, "answer": "ok"}`,
			`{"question": "first", "%[2]s": %[1]s}`,
			`{"answer": %s, "question": "q", "memify_metadata": null, "feedback_score": NaN}`,
			`{"context":%s,"question":"q","answer":"a","question":%[1]s}`,
			`{"question": %s, "answer": "a", "m": {"k": [1, {"z": null}]}}`,
			`{"question": [%s], "answer": %[1]s}`,
			`{"question": "q", "%[2]s": "x", "answer": %[1]s, "%[2]s": %[1]s}`,
		}
		fr := frames[int(mode)%len(frames)]
		in := fmt.Sprintf(fr, v, key)
		if !strings.Contains(fr, "%[2]s") {
			in = fmt.Sprintf(fr, v)
		}
		checkAnalyse(t, []byte(in))
	})
}

// pyDumps is Python's json.dumps(ensure_ascii=True) of a str.
func pyDumps(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (r >= 0x7f && r < 0x10000):
			fmt.Fprintf(&b, `\u%04x`, r)
		case r >= 0x10000:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// The same logical entry written by the sidecar (NewQAEntry), by Cognee
// (json.dumps, NaN score, a nested memify_metadata) and raw UTF-8 gives
// one document.
func FuzzAnalyseEntryEncodings(f *testing.F) {
	f.Add("Where is the café?", "", "Zürich 🦊 \"old\"")
	f.Add("a\u2028b", "\x01ctl\t", "\\")
	f.Fuzz(func(t *testing.T, q, c, a string) {
		if !utf8.ValidString(q) || !utf8.ValidString(c) || !utf8.ValidString(a) {
			return
		}
		qr, _ := json.Marshal(q)
		cr, _ := json.Marshal(c)
		ar, _ := json.Marshal(a)
		side, err := cognee.NewQAEntry(cognee.QAFields{Question: qr, Context: cr, Answer: ar}, "id1", time.Unix(0, 0))
		if err != nil {
			return
		}
		py := fmt.Sprintf(`{"time": "2026-11-24T10:00:00.000000", "question": %s, "context": %s, "answer": %s, "qa_id": "c1", "feedback_text": null, "feedback_score": NaN, "used_graph_element_ids": null, "memify_metadata": {"k": [1]}, "used_session_context_ids": null}`, pyDumps(q), pyDumps(c), pyDumps(a))
		pyFlat := fmt.Sprintf(`{"time": "2026-11-24T10:00:00.000000", "question": %s, "context": %s, "answer": %s, "qa_id": "c1", "feedback_text": null, "feedback_score": 3, "used_graph_element_ids": ["x"], "memify_metadata": null, "used_session_context_ids": null}`, pyDumps(q), pyDumps(c), pyDumps(a))
		gm, _ := json.Marshal(map[string]string{"question": q, "context": c, "answer": a})
		want := analyseSlow(side)
		for _, in := range [][]byte{side, []byte(py), []byte(pyFlat), gm} {
			if got := analyseEntry(in); got != want {
				t.Fatalf("%q:\n got  %+v\n want %+v (sidecar %s)", in, got, want, side)
			}
			if got := analyseSlow(in); got != want {
				t.Fatalf("slow %q:\n got  %+v\n want %+v", in, got, want)
			}
		}
	})
}

func TestAnalyseSeeds(t *testing.T) {
	for _, s := range analyseSeeds {
		checkAnalyse(t, []byte(s))
	}
	// very large
	big := `{"question": "` + strings.Repeat("caf\\u00e9 word ", 200000) + `", "answer": "` + strings.Repeat("x", 3<<20) + `"}`
	checkAnalyse(t, []byte(big))
	deep := `{"question": "q", "answer": "a", "x": ` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`
	checkAnalyse(t, []byte(deep))
}
