package messages_test

import (
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A write that takes the latest path (as read) past
// SESSION_COMPACT_AFTER_TOKENS emits compaction_suggested once per upward
// crossing: an append, a PUT that grows a message; not the writes that
// stay above or below it.
func TestCompactionSuggestedEvent(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_COMPACT_AFTER_TOKENS": "25", "SESSION_EVENTS": "always"})
		key := srv.Layout().SessionEvents("alice", "s1")
		c := srv.Client(t)
		suggested := func() int {
			t.Helper()
			evs := redisstoretest.StreamEvents(t, c, key)
			n := 0
			for _, e := range evs {
				if e.Type == "compaction_suggested" {
					n++
					if e.Data["total_tokens"] == nil || e.Data["threshold"] != float64(25) {
						t.Errorf("compaction_suggested data: %v", e.Data)
					}
				}
			}
			return n
		}
		post(t, h, `{"id":"a","role":"user","content":"x","token_count":10}`, 201)
		post(t, h, `{"id":"b","role":"user","content":"x","token_count":10}`, 201)
		if got := suggested(); got != 0 {
			t.Fatalf("at 20 tokens of 25: got %d events, want 0", got)
		}
		post(t, h, `{"id":"c","role":"user","content":"x","token_count":10}`, 201)
		post(t, h, `{"id":"d","role":"user","content":"x","token_count":10}`, 201)
		if got := suggested(); got != 1 {
			t.Fatalf("at 30 then 40 tokens: got %d events, want 1 (%v)", got, types(redisstoretest.StreamEvents(t, c, key)))
		}
		for range 2 {
			if rep := h.Do(t, "POST", msgs+"/pop", ""); rep.Status != 200 {
				t.Fatal(rep)
			}
		}
		// back to 20: a PUT that grows b crosses again
		if rep := h.Do(t, "PUT", msgs+"/b", `{"role":"user","content":"x","token_count":20}`); rep.Status != 200 {
			t.Fatal(rep)
		}
		if got := suggested(); got != 2 {
			t.Fatalf("after the PUT to 30: got %d events, want 2", got)
		}
		if !slices.Contains(types(redisstoretest.StreamEvents(t, c, key)), "message_updated") {
			t.Fatal("no message_updated")
		}
	})
}
