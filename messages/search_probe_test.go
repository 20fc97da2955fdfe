package messages_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// Under SEARCH_INDEX=on-demand a pod that has not seen the user with an
// index appends a message without its search document (no analysis, the
// spec '?!'): for a user who never searched nothing of the index is
// written; for a user who searched through another pod the script says so,
// the answer is the message as always, and the pod's catch-up indexes it.
func TestMessageAppendWithoutDocument(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		a, b := start(t, srv, nil), start(t, srv, nil)
		// alice has never searched: pod b's append writes no search key
		post(t, b, `{"id":"m0","role":"user","content":"the walrus sleeps"}`, 201)
		if keys := srv.Keys(t, "agent_search*"); len(keys) != 0 {
			t.Fatalf("a user who never searched has search keys: %v", keys)
		}
		// she searches through pod a: her index is built, m0 in it
		if got := find(t, a, "/v1/users/alice/search?", "walrus"); len(got) != 1 || got[0].ID != "m0" {
			t.Fatalf("first search: %+v", got)
		}
		// pod b does not know she has an index: its append goes without
		// the document, and its answer is the message as always
		rep := b.Do(t, "POST", msgs, `{"id":"m1","role":"user","content":"the narwhal swims"}`)
		if rep.Status != 201 || strings.Contains(rep.Body, "index_pending") || !strings.Contains(rep.Body, `"id":"m1"`) {
			t.Fatalf("append through pod b: %s", rep)
		}
		// pod b's catch-up indexes it (in the background: a few tries)
		var got []hit
		for range 50 {
			if got = find(t, a, "/v1/users/alice/search?", "narwhal"); len(got) == 1 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(got) != 1 || got[0].ID != "m1" || !strings.Contains(got[0].Snippet, "narwhal") {
			t.Fatalf("narwhal after pod b's append: %+v", got)
		}
	})
}
