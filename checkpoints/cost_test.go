package checkpoints_test

import (
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// The Redis commands of one checkpoint write over HTTP, on a real
// redis-server (INFO commandstats; the script's FCALL and every command
// it runs), with the defaults (SESSION_EVENTS=watched, nobody watching):
// a write to a thread that exists, within the core's grain, pays its own
// job and a fixed bookkeeping (the marker and the record read, one record
// HSET); a thread's first put adds the lifecycle indexes and TTLs. Bounds,
// not timings: a change to the core or the scripts that costs more shows
// here.
func TestWriteCost(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	c := srv.Client(t)
	// a super-step's put: 5 channels, 2 of them changed
	step := func(id string) map[string]string {
		return map[string]string{"a": id + `=[1]`, "b": id + `=[2]`, "c": "1", "d": "1", "e": "1"}
	}
	want(t, put(t, h, base, "", "c0", "", `{"step":0}`, step("0")), 200)
	want(t, writes(t, h, "", "c0", "task", "", "0:a:1"), 200)
	for _, tc := range []struct {
		name string
		call func() sidecartest.Reply
		most int64
	}{
		{"a super-step's put (5 channels, 2 values)", func() sidecartest.Reply {
			return put(t, h, base, "", "c1", "c0", `{"step":1}`, step("1"))
		}, 15},
		{"3 pending writes to a stored checkpoint", func() sidecartest.Reply {
			return writes(t, h, "", "c1", "task", "", "0:a:1", "1:b:2", "2:c:3")
		}, 16},
		{"a pending write before its checkpoint", func() sidecartest.Reply {
			return writes(t, h, "", "c2", "task", "", "0:a:1")
		}, 14},
		{"a new thread's first put", func() sidecartest.Reply {
			return put(t, h, "/v1/users/u1/sessions/t2/checkpoints", "", "c0", "", `{}`, step("0"))
		}, 22},
	} {
		got := redisstoretest.CommandsOf(t, c, func() { want(t, tc.call(), 200) })
		t.Logf("%s: %s", tc.name, got)
		if got.Total > tc.most {
			t.Errorf("%s: %s Redis commands, want at most %d", tc.name, got, tc.most)
		}
	}
}
