package messages_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The AI SDK's UIMessage allows any JSON value as metadata (its type is
// unknown): a string, a number, a list, a boolean or an object is stored
// and answered byte for byte, on append, on a retry and by PATCH; only its
// size is bounded.
func TestMetadataAnyJSONValue(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		values := []string{`"a note"`, `42`, `-1.5e3`, `true`, `false`, `[1,"two",{"three":3}]`, `[]`, `{}`, `{"k":[1, 2.50]}`}
		for i, v := range values {
			id := string(rune('a' + i))
			body := `{"id":"` + id + `","role":"user","content":"hi","metadata":` + v + `}`
			m := post(t, h, body, 201)
			if string(m.Metadata) != v {
				t.Fatalf("metadata %s answered as %s", v, m.Metadata)
			}
			if got := post(t, h, body, 200); string(got.Metadata) != v { // the retry is the same message
				t.Fatalf("retry of metadata %s answered %s", v, got.Metadata)
			}
			rep := h.Do(t, "GET", msgs+"/"+id, "")
			if rep.Status != 200 || !strings.Contains(rep.Body, `"metadata":`+v) {
				t.Fatalf("GET %s: %s", id, rep)
			}
		}
		// PATCH sets a non-object value, then null removes it
		if rep := h.Do(t, "PATCH", msgs+"/a", `{"metadata":"rated"}`); rep.Status != 200 || !strings.Contains(rep.Body, `"metadata":"rated"`) {
			t.Fatalf("PATCH metadata string: %s", rep)
		}
		if rep := h.Do(t, "PATCH", msgs+"/a", `{"metadata":null}`); rep.Status != 200 || strings.Contains(rep.Body, `"metadata"`) {
			t.Fatalf("PATCH metadata null: %s", rep)
		}
	})
}
