package messages_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// TestTransactionsSearchOnDemand: under SEARCH_INDEX=on-demand (the
// default) a transaction of a user who never searched writes no search
// key, like an append; once the user has an index, the messages a
// transaction writes are found, and no term of the session's index (nor
// any key) holds the on-demand spec's '?' prefix.
func TestTransactionsSearchOnDemand(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		tx(t, h, `{"operation_id":"op-1","type":"append_items","messages":[`+item("zanzibar holiday")+`]}`, 201, "")
		for _, k := range srv.Keys(t, "*") {
			if strings.Contains(k, "agent_search") {
				t.Errorf("a user who never searched has search key %s", k)
			}
		}
		if got := find(t, h, "/v1/users/alice/search?", "zanzibar"); len(got) != 1 {
			t.Fatalf("first search: %v", got)
		}
		a := tx(t, h, `{"operation_id":"op-2","type":"append_items","messages":[`+item("platypus eggs")+`]}`, 201, "")
		if got := find(t, h, "/v1/users/alice/search?", "platypus"); len(got) != 1 || got[0].ID != a.Messages[0].ID {
			t.Errorf("a transaction's message after the first search: %v", got)
		}
		c, docs := srv.Client(t), srv.Layout().SearchDocs("alice", "s1")
		fields, err := c.Do(t.Context(), c.B().Hkeys().Key(docs).Build()).AsStrSlice()
		if err != nil || len(fields) == 0 {
			t.Fatalf("%s: %q (%v)", docs, fields, err)
		}
		for _, f := range append(fields, srv.Keys(t, "*")...) {
			if strings.Contains(f, "?") {
				t.Errorf("%q holds the on-demand prefix", f)
			}
		}
	})
}
