package messages

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// The messages' fetcher answers each message's texts as its document was
// analysed from (storedDoc), leaves out a message gone, and keeps one past
// SnippetBytes (or not a message) without texts.
func TestMessageTextsFetcher(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := &Store{Store: sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600})}
		bodies := map[string]string{
			"a":    `{"id":"a","role":"user","content":"How do I deploy?","created_at":"2026-11-27T06:00:00Z","tokens":9}`,
			"b":    `{"id":"b","role":"user","parts":[{"type":"text","text":"Résumé"}],"item":{"content":[{"type":"input_text","text":"of the deploy"}]},"created_at":"2026-11-27T06:00:01Z","tokens":9}`,
			"junk": `not json`,
			"big":  `{"id":"big","role":"user","content":"` + strings.Repeat("x", SnippetBytes) + `"}`,
		}
		c := srv.Client(t)
		key := SessionKeys(srv.Layout(), "u", "s").Messages
		cmd := c.B().Hset().Key(key).FieldValue()
		for id, b := range bodies {
			cmd = cmd.FieldValue(id, b)
		}
		if err := c.Do(t.Context(), cmd.Build()).Error(); err != nil {
			t.Fatal(err)
		}
		got, err := s.searchTexts(t.Context(), "u", "s", []string{"a", "gone", "b", "junk", "big"})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b"} {
			d, err := storedDoc([]byte(bodies[id]))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[id], d.text) || len(d.text) == 0 {
				t.Errorf("%s: texts %q, want storedDoc's %q", id, got[id], d.text)
			}
		}
		for _, id := range []string{"junk", "big"} {
			if v, ok := got[id]; !ok || v != nil {
				t.Errorf("%s: %q (held %v), want kept without texts", id, v, ok)
			}
		}
		if _, ok := got["gone"]; ok || len(got) != 4 {
			t.Errorf("texts %d: %q; want the message gone left out", len(got), got)
		}
		if got, err := s.searchTexts(t.Context(), "u", "nosession", []string{"a"}); err != nil || len(got) != 0 {
			t.Errorf("a session gone: %q, %v", got, err)
		}
	})
}
