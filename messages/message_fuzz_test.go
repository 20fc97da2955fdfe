package messages

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// FuzzMessageCheck: whatever body a client sends, checking it never
// panics, and a message it accepts encodes as one valid JSON object whose
// raw fields (content, parts, item, metadata) are the bytes sent, with
// tokens of at least the per-message overhead.
func FuzzMessageCheck(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi"}`,
		`{"id":"m1","role":"assistant","content":"a\u003cb","parts":[{"type":"text","text":"x"}],"metadata":{"k":[1, 2.50]}}`,
		`{"role":"tool","tool_call_id":"c1","content":"sunny"}`,
		`{"role":"assistant","tool_calls":[{"id":"c1","name":"f","arguments":{"a":1}}]}`,
		`{"role":"user","item":{"content":[{"type":"input_text","text":"héllo wörld"}]},"format":"openai.responses"}`,
		`{"role":"user","token_count":12,"parent_id":null}`,
		`{"messages":[{"role":"user"},{"role":"user","parent_id":"x"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in postBody
		if sidecar.DecodeJSONBytes(body, &in) != nil {
			return
		}
		list := in.Messages
		if list == nil {
			list = []messageIn{in.messageIn}
		}
		for _, m := range list {
			msg, err := m.check("", 1<<20)
			if err != nil {
				continue
			}
			var out map[string]json.RawMessage
			if err := json.Unmarshal(msg.Body, &out); err != nil {
				t.Fatalf("body %s: %v", msg.Body, err)
			}
			for name, raw := range map[string]json.RawMessage{"content": m.Content, "parts": m.Parts, "item": m.Item, "metadata": m.Metadata} {
				if present(raw) && !bytes.Equal(out[name], raw) {
					t.Fatalf("%s: stored %s, sent %s", name, out[name], raw)
				}
			}
			if m.TokenCount == nil && msg.Tokens < 4 {
				t.Fatalf("tokens %d below the per-message overhead", msg.Tokens)
			}
		}
	})
}
