package events

import "github.com/agentsidecar/agentsidecar/redisstore"

// EventKeysFamily is the module's own key family: the ring of the
// Idempotency-Keys of a session's custom events (key -> the event id, the
// 1 000 newest), a session family, so the session scripts slide and delete
// it with the session's other keys (redisstore.SessionPrefixes). The event
// streams themselves are written by every session script and declared in
// redisstore (SessionEventsFamily, UserEventsFamily).
var EventKeysFamily = redisstore.Register(redisstore.Family{
	Name: "event keys", Prefix: "agent_session_event_keys", Scope: redisstore.ScopeSession,
	Kind: redisstore.KindHash, Owner: "events", TTL: redisstore.SessionTTL,
	Description: "`Idempotency-Key` → the event id of a custom event (`POST .../events`), the 1 000 newest, so a retried publish writes once",
})

// WatchFamily and UserWatchFamily are the markers that say a stream is
// watched (SESSION_EVENTS=watched): "<until ms>:<since ms>", set by every
// reader of the stream (lua/events_watch.lua, from the hub on any pod) and
// read by every write's script (lua/lib/events.lua), which records its
// event only while <until> is ahead. The session's is one of the session's
// own keys, so it is deleted with the session; a slide may keep it past
// its grace period, which is why its value decides, not its TTL.
var (
	WatchFamily = redisstore.Register(redisstore.Family{
		Name: "session events watch", Prefix: "agent_session_events_watch", Scope: redisstore.ScopeSession,
		Kind: redisstore.KindString, Owner: "events", TTL: redisstore.SessionTTL,
		Description: "`<until ms>:<since ms>`: the session's event stream is watched (its events recorded) until then, unbroken since then; set by every reader, `SESSION_EVENTS_GRACE_SECONDS` ahead, refreshed every heartbeat",
	})
	UserWatchFamily = redisstore.Register(redisstore.Family{
		Name: "user events watch", Prefix: "agent_user_events_watch", Scope: redisstore.ScopeUser,
		Kind: redisstore.KindString, Owner: "events", TTL: redisstore.RetentionTTL,
		Reason:      "`SESSION_EVENTS_GRACE_SECONDS` from the last reader's refresh",
		Description: "the same for the user's event stream (`GET /v1/users/{u}/events`)",
	})
)
