package redisstore

// Layout builds every key name the sidecar uses. On standalone Redis the
// session lists keep Cognee's names exactly, so Cognee processes share them;
// on Redis Cluster every key of one session carries the hash tag
// {<user_id>:<session_id>} so that one script can touch them all (ids cannot
// contain braces or ':', so tags never collide).
type Layout struct {
	Cluster bool
}

// SessionKeys are the keys one session script takes, in the order of
// lua/session_lib.lua: the session's own keys, then the indexes and totals
// its writes keep current.
type SessionKeys struct {
	Entries string // agent_sessions:<u>:<s>: Cognee's Q&A list
	Traces  string // agent_traces:<u>:<s>: Cognee's trace list
	Context string // session_context:<u>:<s>: Cognee's session-context list
	Record  string // agent_session_record:<u>:<s>: status, activity, usage, TTL (hash)
	Index   string // agent_session_qa_index:<u>:<s>: qa_id -> position (hash)
	Usage   string // agent_session_usage_ids:<u>:<s>: Idempotency-Key -> first result (hash)

	// Sorted sets of the user's sessions scored by last activity (µs), one
	// per stored status: running, completed, failed. "abandoned" is a score
	// range of the running set; "any status" merges the three on read.
	UserIndex [3]string
	// The same across users (members "<user_id>:<session_id>").
	GlobalIndex [3]string
	Expiry      string // agent_sessions_global:expiry: member -> expiry time (µs), to drop expired sessions from the indexes
	Totals      string // agent_usage_totals: tokens, nano-USD, calls, errors (hash)
	ByModel     string // agent_usage_by_model: "<model>\t<field>" -> total (hash)
}

// IndexStatuses names the three sorted sets of UserIndex and GlobalIndex.
var IndexStatuses = [3]string{"running", "completed", "failed"}

// Session returns the keys of session (user, session).
func (l Layout) Session(user, session string) SessionKeys {
	id := user + ":" + session
	if l.Cluster {
		id = "{" + id + "}"
	}
	k := SessionKeys{
		Entries: "agent_sessions:" + id,
		Traces:  "agent_traces:" + id,
		Context: "session_context:" + id,
		Record:  "agent_session_record:" + id,
		Index:   "agent_session_qa_index:" + id,
		Usage:   "agent_session_usage_ids:" + id,
		Expiry:  "agent_sessions_global:expiry",
		Totals:  "agent_usage_totals",
		ByModel: "agent_usage_by_model",
	}
	k.UserIndex = l.UserIndex(user)
	k.GlobalIndex = globalIndex
	return k
}

var globalIndex = Layout{}.GlobalIndex()

// UserIndex returns the user's three session indexes.
func (l Layout) UserIndex(user string) [3]string {
	var out [3]string
	for i, s := range IndexStatuses {
		out[i] = "agent_sessions_by_user:" + user + ":" + s
	}
	return out
}

// GlobalIndex returns the three indexes across users.
func (l Layout) GlobalIndex() [3]string {
	var out [3]string
	for i, s := range IndexStatuses {
		out[i] = "agent_sessions_global:" + s
	}
	return out
}

// Own returns the keys that belong to the session alone (what a delete
// removes and a TTL slide moves).
func (k SessionKeys) Own() []string {
	return []string{k.Entries, k.Traces, k.Context, k.Record, k.Index, k.Usage}
}

// List returns every key in script order.
func (k SessionKeys) List() []string {
	out := append(k.Own(), k.UserIndex[:]...)
	out = append(out, k.GlobalIndex[:]...)
	return append(out, k.Expiry, k.Totals, k.ByModel)
}
