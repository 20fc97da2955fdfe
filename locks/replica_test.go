package locks_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// With SIDECAR_LOCK_REPLICA_WAIT_MS set, a grant waits for one replica
// (WAIT 1 <ms> on the connection that ran the acquire) and says whether it
// reached one, so a caller can refuse a grant a failover could undo.
func TestGrantReportsReplication(t *testing.T) {
	primary := redisstoretest.NewReal(t)
	port := primary.Addr[strings.LastIndexByte(primary.Addr, ':')+1:]
	replica := redisstoretest.NewReal(t, "--replicaof", "127.0.0.1", port)
	rc := replica.Client(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, _ := rc.Do(t.Context(), rc.B().Info().Section("replication").Build()).ToString()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica never synced:\n%s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}

	h := sidecartest.Start(t, primary, envconf.Env{"SIDECAR_LOCK_REPLICA_WAIT_MS": "300"}, locks.Factory)
	var g struct {
		Token        string `json:"token"`
		FencingToken int64  `json:"fencing_token"`
		Replicated   *bool  `json:"replicated"`
	}
	r := h.Do(t, "POST", "/v1/locks/replicated", `{"ttl_ms":60000}`)
	if err := json.Unmarshal([]byte(r.Body), &g); err != nil || r.Status != 200 || g.Replicated == nil || !*g.Replicated {
		t.Fatalf("grant with a live replica: %d %s, want replicated true", r.Status, r.Body)
	}
	// The replica holds the grant (that is what WAIT waited for).
	if v, _ := rc.Do(t.Context(), rc.B().Get().Key("replicated").Build()).ToString(); v != g.Token {
		t.Fatalf("replica has %q, want the token", v)
	}

	replica.Kill()
	r = h.Do(t, "POST", "/v1/locks/unreplicated", `{"ttl_ms":60000}`)
	if err := json.Unmarshal([]byte(r.Body), &g); err != nil || r.Status != 200 || g.Replicated == nil || *g.Replicated {
		t.Fatalf("grant with the replica gone: %d %s, want 200 and replicated false", r.Status, r.Body)
	}

	// Off by default: no field, no WAIT.
	h2 := sidecartest.Start(t, primary, nil, locks.Factory)
	r = h2.Do(t, "POST", "/v1/locks/plain", `{"ttl_ms":60000}`)
	if r.Status != 200 || strings.Contains(r.Body, "replicated") {
		t.Fatalf("grant without the replica wait: %d %s", r.Status, r.Body)
	}
}

func TestReplicaWaitConfig(t *testing.T) {
	for _, v := range []string{"-1", "10001", "soon"} {
		_, err := locks.LoadConfig(envconf.Env{"SIDECAR_LOCK_REPLICA_WAIT_MS": v})
		if err == nil || !strings.HasPrefix(err.Error(), "SIDECAR_LOCK_REPLICA_WAIT_MS: ") {
			t.Errorf("%s: got %v, want an error naming SIDECAR_LOCK_REPLICA_WAIT_MS", v, err)
		}
	}
}
