package redisstore

// Layout builds every key name the sidecar uses. On standalone Redis the
// session lists keep Cognee's names exactly, so Cognee processes share them;
// on Redis Cluster every key of one session carries the hash tag
// {<user_id>:<session_id>} so that one script can touch them all (ids cannot
// contain braces or ':', so tags never collide).
type Layout struct {
	Cluster bool
}

// SessionKeys are the keys of one session, in the order session scripts take
// them (lua/session_lib.lua).
type SessionKeys struct {
	Entries string // agent_sessions:<u>:<s>: Cognee's Q&A list
	Traces  string // agent_traces:<u>:<s>: Cognee's trace list
	Context string // session_context:<u>:<s>: Cognee's session-context list
	Record  string // agent_session_record:<u>:<s>: status, activity, TTL (hash)
	Index   string // agent_session_qa_index:<u>:<s>: qa_id -> position (hash)
}

// Session returns the keys of session (user, session).
func (l Layout) Session(user, session string) SessionKeys {
	id := user + ":" + session
	if l.Cluster {
		id = "{" + id + "}"
	}
	return SessionKeys{
		Entries: "agent_sessions:" + id,
		Traces:  "agent_traces:" + id,
		Context: "session_context:" + id,
		Record:  "agent_session_record:" + id,
		Index:   "agent_session_qa_index:" + id,
	}
}

// List returns the keys in script order.
func (k SessionKeys) List() []string {
	return []string{k.Entries, k.Traces, k.Context, k.Record, k.Index}
}
