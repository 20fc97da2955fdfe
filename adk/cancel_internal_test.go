package adk

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// On Cluster the `app:` part of a delta is a second script after the
// event's: a caller gone in between (its request's context cancelled, a
// client timeout) must not leave the stored event without its `app:` keys.
func TestAppDeltaOutlivesTheCaller(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		st := &Store{Store: sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}),
			cfg: Config{MaxEvents: 10, MaxEventBytes: 1 << 20, MaxStateBytes: 1 << 18, MaxSessions: 10}, maxAnswer: 1 << 22}
		ms, err := st.Create(t.Context(), "weather", "alice", "s1", delta{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		stop := lua.Observe(func(s *lua.Script, _, _ []string) {
			if s == luaScripts.App {
				cancel() // the caller goes as the second script is sent
			}
		})
		_, err = st.Append(ctx, "weather", "alice", "s1", ms, ms+"1", "e1", []byte(`{"id":"e1","timestamp":`+ms+`1}`),
			newDelta(map[string]json.RawMessage{"app:x": json.RawMessage(`1`)}))
		stop()
		key, _ := st.appKey("weather")
		got, rerr := st.appState(t.Context(), key)
		if rerr != nil || !slices.Equal(got, []string{"x", "1"}) {
			t.Fatalf("app state %v %v after the append (%v)", got, rerr, err)
		}
	})
}
