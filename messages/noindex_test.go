package messages_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A message without a document to write (SEARCH_INDEX=off, or no
// searchable word) touches no key of the search index: the session does
// not list the index's family (its record's fams) without its key, and the
// user's marker does not list the user's list of indexed sessions. And a
// split, whose checks of the continuation's first message all come before
// the ended session's first write, does not read the index either: with a
// foreign key where the user's list would be, it once ended the session,
// then refused the continuation (409 "nothing was changed") half-way.
func TestMessageWithoutDocumentTouchesNoIndexKey(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "off"})
		post(t, h, `{"id":"a","role":"user","content":"apples from the orchard"}`, 201)
		l, c := srv.Layout(), srv.Client(t)
		fams, err := c.Do(t.Context(), c.B().Hget().Key(l.Session("alice", "s1").Record).Field("fams").Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(fams, " sd ") {
			t.Errorf("record's fams %q lists the search documents, which SEARCH_INDEX=off never writes", fams)
		}
		if keys := srv.Keys(t, l.UserMarker("alice")); len(keys) != 0 {
			t.Errorf("the user's marker was made by a write that keeps no user key: %v", keys)
		}
		list := l.SearchSessions("alice")
		if err := c.Do(t.Context(), c.B().Set().Key(list).Value("another program's").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/split", `{"summary":"We talked about one.","session_id":"s1-2"}`)
		if rep.Status != 201 {
			t.Fatalf("split: %s", rep)
		}
		for sid, want := range map[string]string{"s1": `"status":"completed"`, "s1-2": `"status":"running"`} {
			if rep := h.Do(t, "GET", "/v1/users/alice/sessions/"+sid, ""); rep.Status != 200 || !strings.Contains(rep.Body, want) {
				t.Errorf("%s after the split: %s", sid, rep)
			}
		}
	})
}
