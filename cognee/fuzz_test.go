package cognee_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/cognee"
)

func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// Transcode keeps the meaning of any JSON value exactly.
func FuzzTranscode(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2.50,-3e-7],"b":{"c":null,"d":"é\n\u2028"}}`, `"x"`, `true`, `[{"":""}]`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		out, err := cognee.Transcode([]byte(in))
		if err != nil {
			t.Fatalf("Transcode(%q): %v", in, err)
		}
		if !utf8.Valid(out) || bytes.ContainsFunc(out, func(r rune) bool { return r > 0x7e }) {
			t.Fatalf("output is not ASCII: %q", out)
		}
		if strings.Contains(in, `"a":1,"a":2`) {
			return // duplicate keys: meaning is parser-defined
		}
		if !reflect.DeepEqual(decodeNumbers(t, []byte(in)), decodeNumbers(t, out)) {
			t.Fatalf("meaning changed:\n in  %s\n out %s", in, out)
		}
	})
}

// AppendString encodes any string so that a JSON parser reads it back.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c", "\x00\x7f", "é😀", "\u2028", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := cognee.AppendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s: %v", s, out, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip %q -> %s -> %q", s, out, back)
		}
	})
}

// Strict never returns invalid JSON, and leaves strict JSON untouched.
func FuzzStrict(f *testing.F) {
	for _, s := range []string{`{"a": NaN}`, `[Infinity,-Infinity]`, `{"s":"NaN"}`, `{`, `nul`, `{"a":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := cognee.Strict([]byte(in))
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Strict(%q) = %q, not JSON", in, out)
		}
		if json.Valid([]byte(in)) && string(out) != in {
			t.Fatalf("Strict changed strict JSON %q to %q", in, out)
		}
	})
}

// Whatever a client posts, NewQAEntry either refuses it with a FieldError
// or writes an entry with Cognee's ten fields in order that Python's
// json.loads would read (strict JSON, ASCII) and Cognee's model accepts
// (CheckQAEntry).
func FuzzNewQAEntry(f *testing.F) {
	for _, s := range []string{
		`{"question":"q","answer":"a"}`,
		`{"question":"q","answer":"a","feedback_score":5,"used_graph_element_ids":{"node_ids":["x"]},"memify_metadata":{"k":true,"d":{"x":[]}},"used_session_context_ids":["c"]}`,
		`{"question":"q","answer":"a","memify_metadata":{"k":1}}`,
		`{"question":null,"answer":"a"}`,
	} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	f.Fuzz(func(t *testing.T, in string) {
		var fields cognee.QAFields
		if json.Unmarshal([]byte(in), &fields) != nil {
			return
		}
		out, err := cognee.NewQAEntry(fields, "id-1", now)
		if err != nil {
			if _, ok := err.(*cognee.FieldError); !ok {
				t.Fatalf("error %T %v is not a FieldError", err, err)
			}
			return
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatalf("entry %s: %v", out, err)
			}
		}
		if strings.Join(keys, ",") != "time,question,context,answer,qa_id,feedback_text,feedback_score,used_graph_element_ids,memify_metadata,used_session_context_ids" {
			t.Fatalf("fields %v", keys)
		}
		if bytes.ContainsFunc(out, func(r rune) bool { return r > 0x7e }) {
			t.Fatalf("non-ASCII output %q", out)
		}
		if err := cognee.CheckQAEntry(out); err != nil {
			t.Fatalf("entry %s is one Cognee's model refuses: %v", out, err)
		}
	})
}
