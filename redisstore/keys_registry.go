package redisstore

// Keys of the registry module (session metadata indexes, user state). The
// session scripts derive the metadata index names in Lua from the record
// key's tag (lua/session_lib.lua, meta_keys); these builders give the same
// names to Go readers and tests.

// MetaIndex is the user's index of sessions whose metadata holds key=value:
// agent_session_meta:<tag><u>:<key>=<value>, a sorted set of session ids
// scored by last activity (µs). Its TTL is that of its longest-lived
// session; members of expired sessions are dropped lazily on read.
func (l Layout) MetaIndex(user, key, value string) string {
	return "agent_session_meta:" + l.tag(l.Bucket(user)) + user + ":" + key + "=" + value
}

// MetaGlobal is the same across the users of shard bucket (members
// "<u>:<s>"): agent_session_meta_global:<tag><key>=<value>.
func (l Layout) MetaGlobal(bucket int, key, value string) string {
	return "agent_session_meta_global:" + l.tag(bucket) + key + "=" + value
}

// UserState is the user's state object (JSON text, a string key):
// agent_user_state:<tag><u>. It slides with SESSION_TTL_SECONDS on each
// write of it.
func (l Layout) UserState(user string) string {
	return "agent_user_state:" + l.tag(l.Bucket(user)) + user
}

// SessionState is a session's state object (JSON text, a string):
// agent_session_state:<tag><u>:<s>, one of the session's own keys (the
// session scripts derive it: lua/session_lib.lua), so it slides, persists
// and is deleted with them.
func (l Layout) SessionState(user, session string) string {
	return "agent_session_state:" + l.tag(l.Bucket(user)) + user + ":" + session
}
