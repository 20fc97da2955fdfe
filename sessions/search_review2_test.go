package sessions_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// Second fresh-eyes review of the per-session search index: each test
// reproduces a defect on a real redis-server.

// A word's postings past their 2 KiB bound keep their newer half: the
// session's newest documents holding the word are still found, and the
// hash keeps hundreds of its postings, the newest last (once
// string.sub(v, string.find(...)) cut the value to its one space: every
// posting of the word went, the new document's too).
func TestSearchPostingsBoundKeepsTheNewerHalf(t *testing.T) {
	srv := redisstoretest.New(t)
	h := startSearch(t, srv, nil)
	const n = 545 // the word's postings pass 2 KiB at the 539th
	for i := 1; i <= n; i++ {
		if rep := h.Do(t, "POST", "/v1/users/u/sessions/s/entries", fmt.Sprintf(`{"qa_id":"q%d","question":"zebra","answer":"ok"}`, i)); rep.Status != 201 {
			t.Fatal(rep)
		}
	}
	res, _ := hits(t, h, "/v1/users/u/sessions/s/search?rank=relevance&limit=100&", "zebra")
	if len(res) != 100 {
		t.Errorf("%d entries found, want 100 of the session's %d", len(res), n)
	}
	v := edocs(t, srv, "u", "s")["zebra"]
	if !strings.HasPrefix(v, " ") || !strings.HasSuffix(v, " ") || len(v) > 2048 {
		t.Fatalf("postings %q: want ' num ... num ', at most 2 KiB", v)
	}
	p := strings.Fields(v)
	if len(p) < 200 || p[len(p)-1] != fmt.Sprint(n) {
		t.Errorf("%d postings ending %q, want at least 200 ending with the newest, %d", len(p), p[len(p)-1:], n)
	}
}
