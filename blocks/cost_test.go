package blocks_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The Redis commands of one block write over HTTP, on a real redis-server
// (INFO commandstats; the script's FCALL and every command it runs),
// with the defaults (SESSION_EVENTS=watched, nobody watching): a write to
// a session that exists, within the core's grain, pays its own job and a
// fixed bookkeeping (the marker and the record read, one record HSET); a
// session's first write adds the lifecycle indexes and TTLs. Bounds, not
// timings: a change to the core or the scripts that costs more shows here.
func TestWriteCost(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	c := srv.Client(t)
	const s = "/v1/users/alice/sessions/s1"
	do := func(method, path, body string, status int) {
		t.Helper()
		if rep := h.Do(t, method, path, body); rep.Status != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, rep.Status, rep.Body, status)
		}
	}
	do("PUT", s+"/blocks/notes", `{"content":"first"}`, 201)
	do("PUT", "/v1/users/alice/blocks/persona", `{"content":"helpful"}`, 201)
	do("POST", s+"/tools/set_context", `{"arguments":{"label":"notes","content":"x"},"tool_call_id":"call_0"}`, 200)
	do("POST", s+"/system-prompt/refresh", "", 200)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		most                     int64
	}{
		{"a session block replaced", "PUT", s + "/blocks/notes", `{"content":"second"}`, 200, 9},
		{"a session block appended to", "POST", s + "/blocks/notes/append", `{"content":" more"}`, 200, 9},
		{"set_context with a new tool_call_id", "POST", s + "/tools/set_context", `{"arguments":{"label":"notes","content":"third"},"tool_call_id":"call_1"}`, 200, 13},
		{"the system prompt refreshed", "POST", s + "/system-prompt/refresh", "", 200, 12},
		{"a user block replaced", "PUT", "/v1/users/alice/blocks/persona", `{"content":"kind"}`, 200, 9},
		{"a user block appended to", "POST", "/v1/users/alice/blocks/persona/append", `{"content":" and brief"}`, 200, 9},
		{"a session block deleted", "DELETE", s + "/blocks/notes", "", 204, 10},
		{"a new session's first block", "PUT", "/v1/users/alice/sessions/s2/blocks/notes", `{"content":"x"}`, 201, 16},
	} {
		got := redisstoretest.CommandsOf(t, c, func() { do(tc.method, tc.path, tc.body, tc.status) })
		t.Logf("%s: %s", tc.name, got)
		if got.Total > tc.most {
			t.Errorf("%s: %s Redis commands, want at most %d", tc.name, got, tc.most)
		}
	}
}
