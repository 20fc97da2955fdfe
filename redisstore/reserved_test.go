package redisstore_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/events"
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/registry"
)

// layoutKeys is every key name and channel the layout's builders make, on
// both layouts, for a few users and every bucket.
func layoutKeys() []string {
	var out []string
	for _, l := range []redisstore.Layout{{}, {Cluster: true}} {
		for i := range 20 {
			user := "user-" + strconv.Itoa(i)
			out = append(out, l.Session(user, "session.1").List()...)
			out = append(out, l.MetaIndex(user, "k", "v"), l.UserKey(registry.UserStateFamily, user), l.UserKey(blocks.UserBlocksFamily, user))
			for _, k := range sessionBuilders(l, user, "session.1") {
				out = append(out, k)
			}
			out = append(out, l.SearchStats(user), l.SearchSessions(user), l.UserEvents(user), l.UserKey(events.UserWatchFamily, user))
		}
		for b := range l.Buckets() {
			g := l.Global(b)
			out = append(out, g.Index[:]...)
			out = append(out, g.Expiry, g.Totals, g.ByModel, g.RecordPrefix, g.UserIndexPrefix, l.MetaGlobal(b, "k", "v"))
		}
	}
	return append(out, locks.ReleaseChannel)
}

// TestReservedCoversTheLayout: every key the sidecar builds is reserved,
// and so is the bare name of each family (standalone's agent_usage_totals
// and agent_usage_by_model are such bare names).
func TestReservedCoversTheLayout(t *testing.T) {
	for _, k := range layoutKeys() {
		if !redisstore.Reserved(k) {
			t.Errorf("Reserved(%q) = false: the sidecar builds this key", k)
		}
	}
	want := []string{
		"adk_app_index", "adk_app_state", "adk_events", "adk_index", "adk_session", "adk_state", "adk_user_state",
		"agent_checkpoint_order", "agent_checkpoints",
		"agent_search_docs", "agent_search_entry_docs", "agent_search_sessions", "agent_search_stats",
		"agent_session_blocks", "agent_session_compactions", "agent_session_context_index", "agent_session_event_keys", "agent_session_events",
		"agent_session_meta", "agent_session_meta_global",
		"agent_session_msg_children", "agent_session_msg_children_staged", "agent_session_msg_order",
		"agent_session_msg_order_staged", "agent_session_msg_tree", "agent_session_msg_tree_staged",
		"agent_session_msgs", "agent_session_msgs_staged", "agent_session_prompt",
		"agent_session_qa_index", "agent_session_record", "agent_session_state", "agent_session_tool_calls",
		"agent_session_usage_ids", "agent_sessions", "agent_sessions_by_user", "agent_sessions_global",
		"agent_traces", "agent_usage_by_model", "agent_usage_totals", "agent_user_blocks", "agent_user_events",
		"agent_user_events_watch", "agent_user_marker", "agent_user_state", "session_context", "sidecar",
	}
	if got := redisstore.ReservedNames(); !slices.Equal(got, want) {
		t.Errorf("ReservedNames() = %v, want %v", got, want)
	}
	for _, name := range want {
		if !redisstore.Reserved(name) || !redisstore.Reserved(name+":x") {
			t.Errorf("Reserved(%q) or Reserved(%q) = false, want true", name, name+":x")
		}
	}
}

func TestReservedLeavesOtherNamesFree(t *testing.T) {
	for _, name := range []string{
		"graph_writes", "kuzu_lock", "agent_sessions2", "agent_usage_totals_backup",
		"sidecar-jobs", "sidecars", "session", "agent", "agent_session", "",
		"{agent_usage_totals}:fence", // a lock's companion key
	} {
		if redisstore.Reserved(name) {
			t.Errorf("Reserved(%q) = true, want false", name)
		}
	}
}
