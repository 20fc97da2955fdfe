package search

import (
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A user-wide search drops the listed sessions whose hashes are gone. A
// write indexing one of them between the search's EXISTS and its ZREM
// (its ZADD of the session then undone by the ZREM) kept its documents
// out of every user-wide search until its next indexing write: the
// session is listed again now.
func TestFindDropStaleRacingAWrite(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		f := newFixture(t, srv)
		f.write(t, "u", map[string]int64{"live": 5, "back": 4, "gone": 3},
			fdoc{"live", "entry", 1, t0, "e1", map[string]int{"zebra": 1}})
		dropHook = func() {
			// the write: its document and its ZADD, at once
			for _, cmd := range f.commands("u", map[string]int64{"back": 6},
				fdoc{"back", "message", 1, t0 + 1, "m1", map[string]int{"zebra": 1}}) {
				f.do(t, cmd)
			}
		}
		t.Cleanup(func() { dropHook = nil })
		f.find(t, "u", "", "zebra", 10)
		dropHook = nil
		if l := f.listed(t, "u"); !slices.Equal(l, []string{"back", "live"}) {
			t.Fatalf("listed %q, want back and live", l)
		}
		if got := f.find(t, "u", "", "zebra", 10); ids(got) != "back/message/m1,live/entry/e1" {
			t.Fatalf("got %s", ids(got))
		}
	})
}
