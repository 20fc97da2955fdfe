package messages_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A raw field (content, parts, tool_calls, item, metadata) is stored and
// answered as sent, so bytes that are not UTF-8 inside it are refused (400
// invalid_json naming it, as in every body): the answers and events would
// not be JSON text.
func TestRawFieldsNotUTF8(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		bad := "\xff\xfe"
		tests := []struct{ field, body string }{
			{"content", `{"role":"user","content":"a` + bad + `"}`},
			{"parts", `{"role":"user","parts":[{"type":"text","text":"` + bad + `"}]}`},
			{"tool_calls", `{"role":"assistant","tool_calls":[{"id":"c1","name":"f","arguments":"` + bad + `"}]}`},
			{"item", `{"role":"user","item":{"x":"` + bad + `"},"format":"openai.responses"}`},
			{"metadata", `{"role":"user","content":"hi","metadata":{"k":"` + bad + `"}}`},
		}
		for _, tt := range tests {
			rep := h.Do(t, "POST", msgs, tt.body)
			if rep.Status != 400 || rep.Code() != "invalid_json" || !strings.Contains(rep.Body, tt.field) {
				t.Errorf("%s: got %s, want 400 invalid_json naming it", tt.field, rep)
			}
		}
		rep := h.Do(t, "GET", msgs, "")
		if rep.Status != 200 || !utf8.ValidString(rep.Body) || strings.Contains(rep.Body, `"role"`) {
			t.Fatalf("messages after the refusals: got %s, want none stored", rep)
		}
	})
}
