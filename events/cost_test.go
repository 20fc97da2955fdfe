package events_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// TestPublishCommands: what a custom event's publish costs Redis, by
// INFO commandstats around one call on a session whose bookkeeping is not
// due (lib/session.lua: the record and the user's marker read, one HSET
// of the record), as it is for the writes that follow one another within
// the grain: the stream's XADD and PUBLISH only while it is recorded, the
// ring of Idempotency-Keys read and written only when a key is sent.
func TestPublishCommands(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	c := srv.Client(t)
	core := map[string]int64{"hmget": 2, "time": 1, "hset": 1}
	with := func(extra map[string]int64) map[string]int64 {
		out := maps.Clone(core)
		for k, v := range extra {
			out[k] += v
		}
		return out
	}
	ring := map[string]int64{"hmget": 1, "hget": 1, "hset": 1}
	// one host per setting, made before anything is counted, without the
	// search index (whose catch-up after a write runs apart from it)
	hosts := map[bool]*sidecartest.Host{}
	for _, rec := range []bool{false, true} {
		env := envconf.Env{"SEARCH_INDEX": "false", "SESSION_EVENTS": "watched"}
		if rec {
			env["SESSION_EVENTS"] = "always"
		}
		h := start(t, srv, env)
		// the session, its ring and its stream made, the bookkeeping done
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`)
		h.Do(t, "POST", base+"/events", `{"event":"x-a","data":0}`, "Idempotency-Key", "first")
		hosts[rec] = h
	}
	for _, tc := range []struct {
		name     string
		recorded bool
		key      string
		want     map[string]int64
	}{
		{"unwatched", false, "", core},
		{"unwatched with a key", false, "k1", with(ring)},
		{"recorded", true, "", with(map[string]int64{"xadd": 1, "publish": 1})},
		{"recorded with a key", true, "k2", with(map[string]int64{"xadd": 1, "publish": 1, "hmget": 1, "hget": 1, "hset": 1})},
		{"a repeated key", true, "k2", map[string]int64{"hmget": 3}},
	} {
		var header []string
		if tc.key != "" {
			header = []string{"Idempotency-Key", tc.key}
		}
		got := redisstoretest.CommandsOf(t, c, func() {
			if r := hosts[tc.recorded].Do(t, "POST", base+"/events", `{"event":"x-a","data":1}`, header...); r.Status != 201 && r.Status != 200 {
				t.Fatalf("%s: publish %s", tc.name, r)
			}
		})
		// a connection's upkeep (a pool's new connection) is not the call's
		for name := range got.Calls {
			if name == "hello" || name == "ping" || strings.HasPrefix(name, "client|") {
				delete(got.Calls, name)
			}
		}
		if !maps.Equal(got.Calls, tc.want) {
			t.Errorf("%s: Redis ran %s, want %v", tc.name, got, tc.want)
		}
	}
}
