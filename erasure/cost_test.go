package erasure_test

import (
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// TestEraseStepCommands: what the steps of a small user's erasure cost
// Redis (INFO commandstats around each call of one step): the user's node
// scanned once, each session erased by what its record lists (its
// members of the status and expiry sets, one UNLINK of its keys) and the
// user's keys unlinked together; the bucket's status and expiry sets
// ZSCANned in one step; the metadata indexes swept and the marker left
// with the fence alone in the last. Every step reads the progress with
// one HMGET of the marker and INFO server (the node's run_id).
func TestEraseStepCommands(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	c := srv.Client(t)
	h := start(t, srv, envconf.Env{"USER_ERASE_STEPS_PER_CALL": "1", "SEARCH_INDEX": "false"})
	for _, s := range []string{"s1", "s2"} {
		ok(t, h, "POST", "/v1/users/alice/sessions/"+s+"/entries", `{"question":"q","answer":"a"}`)
		ok(t, h, "POST", "/v1/users/alice/sessions/"+s+"/traces", `{"origin_function":"f","status":"ok"}`)
	}
	ok(t, h, "POST", "/v1/users/bob/sessions/b1/entries", `{"question":"q","answer":"a"}`)
	step := map[string]int64{"hmget": 1}
	with := func(extra map[string]int64) map[string]int64 {
		out := maps.Clone(step)
		for k, v := range extra {
			out[k] += v
		}
		return out
	}
	for i, want := range []map[string]int64{
		// the SCAN; the user's sessions counted (ZCARD of 3 status sets);
		// per session its record read, 3 ZREMs (its status sets, the
		// expiry set) and an UNLINK; one UNLINK of the user's keys; the
		// progress saved (HSET, EXPIRE)
		with(map[string]int64{"scan": 1, "zcard": 3, "hmget": 2, "zrem": 6, "unlink": 3, "hset": 1, "expire": 1}),
		// the expiry set and the 3 status sets of the bucket
		with(map[string]int64{"zscan": 4, "hset": 1, "expire": 1}),
		// the sweep's SCAN, the marker unlinked and made the fence alone
		with(map[string]int64{"scan": 1, "unlink": 1, "hset": 1, "expire": 1}),
	} {
		var r sidecartest.Reply
		got := redisstoretest.CommandsOf(t, c, func() { r = h.Do(t, "DELETE", "/v1/users/alice", "") })
		// a connection's upkeep (a pool's new connection) is not the step's
		for name := range got.Calls {
			if name == "hello" || name == "ping" || strings.HasPrefix(name, "client|") {
				delete(got.Calls, name)
			}
		}
		if !maps.Equal(got.Calls, want) {
			t.Errorf("step %d: Redis ran %s, want %v", i+1, got, want)
		}
		if done := i == 2; (r.Status == http.StatusOK) != done {
			t.Fatalf("step %d: %s", i+1, r)
		}
	}
}
