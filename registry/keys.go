package registry

import "github.com/agentsidecar/agentsidecar/redisstore"

// The module's own key families. The metadata indexes are the registry's
// too, but the shared listings read them, so they are declared in
// redisstore (redisstore.MetaIndexFamily, redisstore.MetaGlobalFamily).
var (
	// SessionStateFamily: a session's state object (JSON text, a string),
	// a session family: the session scripts slide and delete it with the
	// session's other keys (redisstore.SessionPrefixes).
	SessionStateFamily = redisstore.Owner("registry").Session("session state", "agent_session_state", "st", redisstore.KindString, "the session's state object (JSON, at most 64 KiB), changed by JSON merge patch")
	// UserStateFamily: the user's state object (JSON text, a string). It
	// lives as long as the user's sessions (the user's marker lists it:
	// session.keep), and each write of it gives it at least
	// SESSION_TTL_SECONDS.
	UserStateFamily = redisstore.Owner("registry").User("user state", "agent_user_state", "", redisstore.KindString, "the user's state object (JSON, at most 64 KiB), changed by JSON merge patch; each write gives it at least `SESSION_TTL_SECONDS`")
)
