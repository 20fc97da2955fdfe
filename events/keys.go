package events

import "github.com/agentsidecar/agentsidecar/redisstore"

// EventKeysFamily is the module's own key family: the ring of the
// Idempotency-Keys of a session's custom events (key -> the event id, the
// 1 000 newest), a session family, so the session scripts slide and delete
// it with the session's other keys (redisstore.SessionPrefixes). The event
// streams themselves are written by every session script and declared in
// redisstore (SessionEventsFamily, UserEventsFamily).
var EventKeysFamily = redisstore.Owner("events").Session("event keys", "agent_session_event_keys", "ek", redisstore.KindHash, "`Idempotency-Key` → the event id of a custom event (`POST .../events`), the 1 000 newest, so a retried publish writes once")

// WatchField and UserWatchFamily say that a stream is watched
// (SESSION_EVENTS=watched): "<until ms>:<since ms>", set by every reader of
// the stream (events_watch.lua, from the hub on any pod), and read by
// every write's script (lua/lib/events.lua), which records its event only
// while <until> is ahead. The session's is a field of the user's marker,
// w:<session id>, which every session write reads with its record at no
// cost of its own; the user's is a key.
var (
	WatchField = redisstore.RegisterMarkerField(redisstore.MarkerField{
		Name: "w", PerSession: true, Owner: "events",
		Description: "`w:<session id>` → `<until ms>:<since ms>`: the session's event stream is watched (its events recorded) until then, unbroken since then; set by every reader, `SESSION_EVENTS_GRACE_SECONDS` ahead, refreshed every heartbeat; a stale one goes with the session, or when a reader meets it",
	})
	UserWatchFamily = redisstore.Register(redisstore.Family{
		Name: "user events watch", Prefix: "agent_user_events_watch", Scope: redisstore.ScopeUser,
		Kind: redisstore.KindString, Owner: "events", TTL: redisstore.RetentionTTL,
		Reason:      "`SESSION_EVENTS_GRACE_SECONDS` from the last reader's refresh",
		Description: "the same for the user's event stream (`GET /v1/users/{u}/events`)",
	})
)
