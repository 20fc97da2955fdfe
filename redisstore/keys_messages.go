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

// Keys of the search index (lua/session_lib.lua, "Search index", writes
// them).

// SearchPostings is the user's postings of term: agent_search:<tag><u>:<term>,
// a sorted set of "<s>\t<kind>\t<id>\t<ver>\t<tf>\t<length>" by time (µs).
func (l Layout) SearchPostings(user, term string) string {
	return "agent_search:" + l.tag(l.Bucket(user)) + user + ":" + term
}

// SearchStats is the user's document count and total length (hash n, len):
// agent_search_stats:<tag><u>.
func (l Layout) SearchStats(user string) string {
	return "agent_search_stats:" + l.tag(l.Bucket(user)) + user
}

// SearchDocs is a session's indexed documents: agent_search_docs:<tag><u>:<s>,
// a hash "<kind>\t<id>" -> "<ver>\t<length>\t<time>\t<digest>\t<preview>", one of the
// session's own keys.
func (l Layout) SearchDocs(user, session string) string {
	return "agent_search_docs:" + l.tag(l.Bucket(user)) + user + ":" + session
}

// SearchEntryDocs is a session's indexed Q&A entries:
// agent_search_entry_docs:<tag><u>:<s>, a hash "entry\t<qa_id>" -> as in
// SearchDocs, and " cov" -> "<n>\t<fingerprint>", the entries list's prefix
// the index covers. One of the session's own keys.
func (l Layout) SearchEntryDocs(user, session string) string {
	return "agent_search_entry_docs:" + l.tag(l.Bucket(user)) + user + ":" + session
}

// SearchDocsOf is the session's documents of kind ("entry" or "message").
func (l Layout) SearchDocsOf(user, session, kind string) string {
	if kind == "entry" {
		return l.SearchEntryDocs(user, session)
	}
	return l.SearchDocs(user, session)
}
