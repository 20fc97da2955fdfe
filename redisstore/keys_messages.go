package redisstore

// Keys of the messages module: a session's messages in six keys whatever
// their number, all in the session's slot. The session scripts derive the
// same names in Lua from the record key's tag (lua/session_lib.lua,
// own_keys), so they slide, persist and are deleted with the session;
// these builders give the names to Go readers and tests.

// MessageKeys are the keys of one session's messages.
type MessageKeys struct {
	Messages string // agent_session_msgs:<tag><u>:<s>: id -> message JSON (hash)
	Tree     string // agent_session_msg_tree:<tag><u>:<s>: id -> parent, jump, depth, path tokens, seq (hash)
	Children string // agent_session_msg_children:<tag><u>:<s>: "<parent>\0<seq>\0<id>" (zset, lex)
	Order    string // agent_session_msg_order:<tag><u>:<s>: id -> append seq (zset)
	Keys     string // agent_session_msg_keys:<tag><u>:<s>: Idempotency-Key -> ids, 1 000 newest (hash)
	// Compactions is agent_session_compactions:<tag><u>:<s>: the
	// compactions in force (hash).
	Compactions string
}

// Messages returns the keys of the messages of session (user, session).
func (l Layout) Messages(user, session string) MessageKeys {
	id := l.tag(l.Bucket(user)) + user + ":" + session
	return MessageKeys{
		Messages: "agent_session_msgs:" + id,
		Tree:     "agent_session_msg_tree:" + id,
		Children: "agent_session_msg_children:" + id,
		Order:    "agent_session_msg_order:" + id,
		Keys:     "agent_session_msg_keys:" + id,

		Compactions: "agent_session_compactions:" + id,
	}
}
