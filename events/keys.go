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
