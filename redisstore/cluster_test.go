package redisstore_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// slot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of the hash tag
// (the first {...} with something inside) or of the whole key, mod 16384.
func slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// The standalone layout is Cognee's, name for name; the cluster layout puts
// all 15 keys of a session script in one slot, and the buckets spread over
// the three slot ranges redis-cli gives a 3-master cluster.
func TestClusterLayout(t *testing.T) {
	k := redisstore.Layout{}.Session("alice", "chat-1")
	want := []string{
		"agent_sessions:alice:chat-1", "agent_traces:alice:chat-1", "session_context:alice:chat-1",
		"agent_session_record:alice:chat-1", "agent_session_qa_index:alice:chat-1", "agent_session_usage_ids:alice:chat-1",
		"agent_sessions_by_user:alice:running", "agent_sessions_by_user:alice:completed", "agent_sessions_by_user:alice:failed",
		"agent_sessions_global:running", "agent_sessions_global:completed", "agent_sessions_global:failed",
		"agent_sessions_global:expiry", "agent_usage_totals", "agent_usage_by_model",
	}
	if got := k.List(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("standalone keys changed:\n got %v\nwant %v", got, want)
	}
	if (redisstore.Layout{}).Buckets() != 1 {
		t.Fatal("standalone layout must have one shard")
	}

	l := redisstore.Layout{Cluster: true}
	ranges := map[int]bool{}
	buckets := map[int]bool{}
	for i := range 2000 {
		user := fmt.Sprintf("user-%d", i)
		keys := l.Session(user, "s").List()
		b := l.Bucket(user)
		buckets[b] = true
		tag := fmt.Sprintf("{b%d}", b)
		for _, key := range keys {
			if !strings.Contains(key, tag) || slot(key) != slot(keys[0]) {
				t.Fatalf("user %s: key %s not in the slot of %s", user, key, keys[0])
			}
		}
		g := l.Global(b)
		if g.Index != l.Session(user, "s").GlobalIndex || slot(g.RecordPrefix+user+":s") != slot(keys[0]) {
			t.Fatalf("user %s: shard %d keys differ", user, b)
		}
		ranges[slot(keys[0])*3/16384] = true
	}
	if len(buckets) != redisstore.Buckets || len(ranges) != 3 {
		t.Fatalf("%d buckets used, %d of 3 slot ranges", len(buckets), len(ranges))
	}
	if k := l.Session("alice", "chat-1"); k.Entries != fmt.Sprintf("agent_sessions:{b%d}:alice:chat-1", l.Bucket("alice")) {
		t.Fatalf("cluster entries key %s", k.Entries)
	}
}
