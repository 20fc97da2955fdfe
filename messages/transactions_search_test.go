package messages_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// TestTransactionsSearchOnDemand: under SEARCH_INDEX=on-demand (the
// default) a transaction of a user who never searched writes no search
// key, like an append; once the user has an index, the messages a
// transaction writes are found, and no postings key holds the on-demand
// spec's '?' prefix.
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
		for _, k := range srv.Keys(t, "*") {
			if strings.Contains(k, "?") {
				t.Errorf("key %s holds the on-demand prefix", k)
			}
		}
	})
}
