package messages_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A cleared session's document versions start again: a message stored
// anew under an id the cleared session held is found by its new words
// only, never by the postings its earlier text left.
func TestSearchAfterClear(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"m1","role":"user","content":"apples from the orchard"}`, 201)
		if rep := h.Do(t, "DELETE", msgs, ""); rep.Status != 204 {
			t.Fatalf("clear: %s", rep)
		}
		post(t, h, `{"id":"m1","role":"user","content":"bananas only"}`, 201)
		user := "/v1/users/alice/search?"
		if got := hitIDs(find(t, h, user, "apples")); got != "" {
			t.Fatalf("apples: got %q, want no hit (m1 no longer says it)", got)
		}
		if got := hitIDs(find(t, h, user, "bananas")); got != "s1/m1" {
			t.Fatalf("bananas: got %q, want s1/m1", got)
		}
		// the same after the session is deleted and made again
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s1", ""); rep.Status != 204 {
			t.Fatalf("delete: %s", rep)
		}
		post(t, h, `{"id":"m1","role":"user","content":"cherries now"}`, 201)
		if got := hitIDs(find(t, h, user, "bananas")); got != "" {
			t.Fatalf("bananas after delete: got %q, want no hit", got)
		}
		if got := hitIDs(find(t, h, user, "cherries")); got != "s1/m1" {
			t.Fatalf("cherries: got %q, want s1/m1", got)
		}
	})
}
