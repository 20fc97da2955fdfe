package adk_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The Redis commands of ADK's writes over HTTP, on a real redis-server
// (INFO commandstats: the script's FCALL and every command it runs), with
// the defaults (SESSION_EVENTS=watched, nobody watching): appendEvent on a
// session that exists, within the core's grain, pays its own job (the ADK
// record, the event, the app index's two orders, each state its delta
// changes) and a fixed bookkeeping (the marker and the record read, one
// record HSET). Bounds, not timings: a change that costs more shows here.
// (On the old core the same appends ran 50, 51 and 57 commands.)
func TestWriteCost(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	c := srv.Client(t)
	s := want(t, h.Do(t, "POST", app, `{"session_id":"s1","state":{"k":1,"user:u":1,"app:a":1}}`), 201)
	last := s.LastUpdateTime
	want(t, h.Do(t, "POST", app+"/s1/events", appendBody("e0", last+1, last, `{"k":2}`)), 201)
	last++
	for _, tc := range []struct {
		name, delta string
		most        int64
	}{
		{"appendEvent, no delta", `{}`, 11},
		{"appendEvent, a session key", `{"k":3}`, 15},
		{"appendEvent, a session, a user: and an app: key", `{"k":4,"user:u":2,"app:a":2}`, 24},
	} {
		got := redisstoretest.CommandsOf(t, c, func() {
			want(t, h.Do(t, "POST", app+"/s1/events", appendBody("e", last+1, last, tc.delta)), 201)
		})
		last++
		t.Logf("%s: %s", tc.name, got)
		if got.Total > tc.most {
			t.Errorf("%s: %s Redis commands, want at most %d", tc.name, got, tc.most)
		}
	}
	// a create answers the session's first page: two scripts
	got := redisstoretest.CommandsOf(t, c, func() { want(t, h.Do(t, "POST", app, `{"session_id":"s2","state":{"k":1}}`), 201) })
	t.Logf("createSession: %s", got)
	if got.Total > 45 {
		t.Errorf("createSession: %s Redis commands, want at most 45", got)
	}
}
