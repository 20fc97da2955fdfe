package adk

import "github.com/agentsidecar/agentsidecar/redisstore"

// The module's key families (lib/adk.lua describes their fields). The
// session families are slid and deleted with the session by the stock
// scripts; the user's are in the user's slot; the app's state is in the
// app's own slot on Cluster.
var (
	SessionFamily = redisstore.Register(redisstore.Family{
		Name: "adk session", Prefix: "adk_session", Code: "a", Scope: redisstore.ScopeSession,
		Kind: redisstore.KindHash, Owner: "adk", TTL: redisstore.SessionTTL,
		Description: "a Google ADK session's own record: app name, created, last update time (the last event's timestamp), event count",
	})
	StateFamily = redisstore.Register(redisstore.Family{
		Name: "adk session state", Prefix: "adk_state", Code: "as", Scope: redisstore.ScopeSession,
		Kind: redisstore.KindHash, Owner: "adk", TTL: redisstore.SessionTTL,
		Description: "a Google ADK session's state: `=<key>` → JSON value, `#` → its bytes (at most `ADK_MAX_STATE_BYTES`)",
	})
	EventsFamily = redisstore.Register(redisstore.Family{
		Name: "adk events", Prefix: "adk_events", Code: "ae", Scope: redisstore.ScopeSession,
		Kind: redisstore.KindHash, Owner: "adk", TTL: redisstore.SessionTTL,
		Description: "a Google ADK session's events: `e<i>` → the event's JSON, `t<i>` → its timestamp, `i:<event id>` → i (at most `ADK_MAX_EVENTS`)",
	})
	UserStateFamily = redisstore.Register(redisstore.Family{
		Name: "adk user state", Prefix: "adk_user_state", Scope: redisstore.ScopeUser, Suffix: "<app_name>",
		Kind: redisstore.KindHash, Owner: "adk", TTL: redisstore.RetentionTTL,
		Reason:      "at least the TTL of each of the user's ADK sessions of the app from its last write (none while one of them has none); at most `ADK_MAX_STATE_BYTES`",
		Description: "the `user:` state a user's ADK sessions of one app share: `=<key>` → JSON value, `#` → its bytes",
	})
	IndexFamily = redisstore.Register(redisstore.Family{
		Name: "adk sessions of a user", Prefix: "adk_index", Scope: redisstore.ScopeUser, Suffix: "<app_name>",
		Kind: redisstore.KindZSet, Owner: "adk", TTL: redisstore.RetentionTTL,
		Reason:      "at least the TTL of each of the user's ADK sessions of the app from its last write (none while one of them has none); at most `ADK_MAX_SESSIONS` members",
		Description: "a user's ADK sessions of one app, scored by creation order (listSessions); members of expired sessions dropped as met",
	})
	AppStateFamily = redisstore.Register(redisstore.Family{
		Name: "adk app state", Prefix: "adk_app_state", Scope: redisstore.ScopeBucket, Suffix: "<app_name>",
		Kind: redisstore.KindHash, Owner: "adk", TTL: redisstore.RetentionTTL,
		Reason:      "at least the session TTL from its last change (`SESSION_TTL_SECONDS`, or the TTL of the session whose event changed it); at most `ADK_MAX_STATE_BYTES`",
		Description: "the `app:` state every user of an ADK app shares: `=<key>` → JSON value, `#` → its bytes; on Cluster in the app's own bucket (the bucket of its name), written by a second script after the event",
	})
)
