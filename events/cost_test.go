package events_test

import (
	"maps"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
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
	commands := func() map[string]int { return redisstoretest.Commands(t, c) }
	core := map[string]int{"fcall": 1, "hmget": 2, "time": 1, "hset": 1}
	with := func(extra map[string]int) map[string]int {
		out := maps.Clone(core)
		for k, v := range extra {
			out[k] += v
		}
		return out
	}
	ring := map[string]int{"hmget": 1, "hget": 1, "hset": 1}
	for _, tc := range []struct {
		name string
		env  envconf.Env
		key  string
		want map[string]int
	}{
		{"unwatched", nil, "", core},
		{"unwatched with a key", nil, "k1", with(ring)},
		{"recorded", always, "", with(map[string]int{"xadd": 1, "publish": 1})},
		{"recorded with a key", always, "k2", with(map[string]int{"xadd": 1, "publish": 1, "hmget": 1, "hget": 1, "hset": 1})},
		{"a repeated key", always, "k2", map[string]int{"fcall": 1, "hmget": 3}},
	} {
		h := start(t, srv, tc.env)
		// the session, its ring and its stream made, the bookkeeping done
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`)
		h.Do(t, "POST", base+"/events", `{"event":"x-a","data":0}`, "Idempotency-Key", "first")
		var header []string
		if tc.key != "" {
			header = []string{"Idempotency-Key", tc.key}
		}
		commands()
		if r := h.Do(t, "POST", base+"/events", `{"event":"x-a","data":1}`, header...); r.Status != 201 && r.Status != 200 {
			t.Fatalf("%s: publish %s", tc.name, r)
		}
		if got := commands(); !maps.Equal(got, tc.want) {
			t.Errorf("%s: Redis ran %v, want %v", tc.name, got, tc.want)
		}
	}
}
