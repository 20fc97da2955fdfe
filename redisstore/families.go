package redisstore

// The key families every session write shares, registered here because
// more than one module (or the shared session scripts) reads or writes
// them and modules never import each other. A module's own families are
// registered in its keys.go (blocks, events, locks, messages, registry).

// indexBound is why the sorted sets of sessions need no TTL.
const indexBound = "bounded by the live sessions: a delete removes the session's members, " +
	"the expiry sweep those of expired sessions"

// A session's own keys that every session script takes (SessionKeys).
var (
	EntriesFamily = Register(Family{
		Name: "entries", Prefix: "agent_sessions", Code: "e", Scope: ScopeSession,
		Kind: KindList, Owner: "sessions", Cognee: true, TTL: SessionTTL,
		Description: "a session's Q&A entries, oldest first, one JSON object each; trimmed to `SESSION_MAX_ENTRIES`",
	})
	TracesFamily = Register(Family{
		Name: "traces", Prefix: "agent_traces", Code: "t", Scope: ScopeSession,
		Kind: KindList, Owner: "sessions", Cognee: true, TTL: SessionTTL,
		Description: "a session's agent trace entries, oldest first; trimmed to `SESSION_MAX_ENTRIES`",
	})
	ContextFamily = Register(Family{
		Name: "context", Prefix: "session_context", Code: "c", Scope: ScopeSession,
		Kind: KindList, Owner: "sessions", Cognee: true, TTL: SessionTTL,
		Description: "a session's context objects (each with an `id`); trimmed to `SESSION_MAX_ENTRIES`",
	})
	RecordFamily = Owner("shared").Session("record", "agent_session_record", "r", KindHash, "a session's status, start, last activity and end (Redis TIME, µs), entry count, usage and cost (per model too), its own TTL")
	// The id indexes are Unlisted: a read of a list Cognee wrote makes one
	// without a write of the session's record.
	QAIndexFamily = Register(Family{
		Name: "qa index", Prefix: "agent_session_qa_index", Code: "q", Scope: ScopeSession,
		Kind: KindHash, Owner: "sessions", Unlisted: true, TTL: SessionTTL,
		Description: "`qa_id` → position in the entries list, so reading, updating or deleting one entry is O(1)",
	})
	ContextIndexFamily = Register(Family{
		Name: "context index", Prefix: "agent_session_context_index", Code: "ci", Scope: ScopeSession,
		Kind: KindHash, Owner: "sessions", Unlisted: true, TTL: SessionTTL,
		Description: "context entry `id` → position in the context list, so appending, updating or deleting one context entry is O(1)",
	})
	// UsageIDsFamily is the usage module's, but one of the KEYS of every
	// session script (SessionKeys.Usage), so it is declared here.
	UsageIDsFamily      = Owner("usage").Session("usage ids", "agent_session_usage_ids", "u", KindHash, "`Idempotency-Key` → the first answer of `POST .../usage`, so a retried call counts once")
	SessionEventsFamily = Owner("shared").Session("session events", "agent_session_events", "ev", KindStream, "the session's live events (`id` = stream id, fields `t` type and `d` JSON data), `XADD MAXLEN ~ SESSION_EVENTS_MAXLEN` by every write's script while the stream is watched (`SESSION_EVENTS`); after a watched session's delete only the `deleted` event, for 300 s")
)

// The messages module's keys that another module reads: the registry's
// start-or-reuse answers a session's newest messages (registry/active.go).
// The module's other keys are in messages/keys.go.
var (
	MessagesFamily     = Owner("messages").Session("messages", "agent_session_msgs", "m", KindHash, "a session's messages, every branch: message id → the message's JSON as answered (`item` as sent); at most `SESSION_MAX_MESSAGES`")
	MessageOrderFamily = Owner("messages").Session("message order", "agent_session_msg_order", "mo", KindZSet, "message id → append number: the message count and the newest message left")
)

// The relevance search index (package search reads it for the messages,
// sessions and blocks modules; the session scripts write it).
var (
	SearchDocsFamily      = Owner("messages").Session("search documents", "agent_search_docs", "sd", KindHash, "the search index of a session's messages: `<term>` → its postings ` <n>[:<tf>] …` (document numbers, oldest first, at most 2 KiB: past it the older half goes), `#<n>` → length, time, terms and message id of document n, `=<id>` → its number; ` n`, ` len`, ` seq`: documents, their total length, the last number given; ` mseq`: the catch-up's cursor")
	SearchEntryDocsFamily = Owner("sessions").Session("search entry documents", "agent_search_entry_docs", "se", KindHash, "the search index of a session's Q&A entries, as `agent_search_docs`'s (`=<qa_id>`); ` cov` → how many of the entries list's first entries are indexed (only those have documents; entries another program appended after them are indexed when the sidecar next writes or searches the session)")
	SearchSessionsFamily  = Register(Family{
		Name: "search sessions", Prefix: "agent_search_sessions", Scope: ScopeUser,
		Kind: KindZSet, SessionMembers: true, Owner: "messages", TTL: UserTTL,
		Description: "a user's sessions holding search documents, by when their documents last changed (µs): a user-wide search reads the newest first; lives as long as the longest-lived of them; a deleted session leaves it, an expired one is dropped by the search that meets it; at most 2 000, the least recently changed go first",
	})
	SearchStatsFamily = Owner("messages").User("search marker", "agent_search_stats", "", KindHash, "the build of the user's index (`SEARCH_INDEX=on-demand`): `build`, the build's cursor until every session is taken in (`''` then); made by the user's first relevance search with the user's marker's field `search`")
)

// The user's keys that every session write (or every user-level write)
// keeps current.
var (
	UserIndexFamily = Register(Family{
		Name: "user index", Prefix: "agent_sessions_by_user", Scope: ScopeUser, Suffix: "<status>",
		Kind: KindZSet, Owner: "shared", TTL: Permanent, Reason: indexBound,
		Description: "a user's session ids by last activity (µs), one set per stored status: `running`, `completed`, `failed`",
	})
	// MetaIndexFamily is the registry's, but the shared listings read it
	// (sessionstore/metadata.go).
	MetaIndexFamily = Register(Family{
		Name: "metadata index", Prefix: "agent_session_meta", Scope: ScopeUser, Suffix: "<key>=<value>",
		Kind: KindZSet, Owner: "registry", TTL: SessionTTL,
		Description: "a user's session ids whose metadata holds `<key>=<value>` (`agent_session_meta:<u>:<key>=<value>`), by last activity (to within 60 s at most); lives as long as the longest-lived of them; members of expired sessions dropped on read and by the bookkeeping of the pair's sessions (two examined each time)",
	})
	UserEventsFamily = Register(Family{
		Name: "user events", Prefix: "agent_user_events", Scope: ScopeUser,
		Kind: KindStream, Owner: "shared", TTL: RetentionTTL,
		Reason:      "`SESSION_TTL_SECONDS` from its last event; `MAXLEN ~ SESSION_EVENTS_MAXLEN`",
		Description: "the user's live events (user state and user-block changes), read by `GET /v1/users/{u}/events`",
	})
)

// The data across users, one shard per bucket (Layout.Global).
var (
	MetaGlobalFamily = Register(Family{
		Name: "global metadata index", Prefix: "agent_session_meta_global", Scope: ScopeBucket, Suffix: "<key>=<value>",
		Kind: KindZSet, SessionMembers: true, Owner: "registry", TTL: SessionTTL,
		Description: "the same across users (members `<u>:<s>`), one per bucket on Cluster",
	})
	// GlobalIndexFamily and ExpiryFamily share their prefix (their names
	// predate the families), so both give their patterns: the three
	// status sets begin with r, c or f, the expiry set is "expiry".
	GlobalIndexFamily = Register(Family{
		Name: "global index", Prefix: "agent_sessions_global", Scope: ScopeBucket, Suffix: "<status>",
		Pattern: "agent_sessions_global:[rcf]*", ClusterPattern: "agent_sessions_global:{b*}:[rcf]*",
		Kind: KindZSet, Owner: "shared", TTL: Permanent, Reason: indexBound,
		Description: "every user's sessions (`<user_id>:<session_id>`) by last activity (µs), one set per stored status: `running`, `completed`, `failed`",
	})
	ExpiryFamily = Register(Family{
		Name: "expiry", Prefix: "agent_sessions_global", Scope: ScopeBucket, Suffix: "expiry",
		Pattern: "agent_sessions_global:expiry", ClusterPattern: "agent_sessions_global:{b*}:expiry",
		Kind: KindZSet, Owner: "shared", TTL: Permanent, Reason: indexBound,
		Description: "`<user_id>:<session_id>` → when the session's keys expire (µs; `+inf` for none), for the sweep",
	})
	TotalsFamily = Register(Family{
		Name: "usage totals", Prefix: "agent_usage_totals", Scope: ScopeBucket,
		Kind: KindHash, Owner: "usage", TTL: Permanent,
		Reason:      "all-time totals, read by `GET /v1/sessions/stats` and the metrics module; five fields, constant size",
		Description: "tokens in and out, cost (nano-USD), calls and errors of every session ever",
	})
	// ByModelFamily gives its patterns: its days begin with a digit, which
	// keeps the all-time hash older versions wrote under this very prefix
	// (agent_usage_by_model, and :{b<N>} on Cluster) out of it.
	ByModelFamily = Register(Family{
		Name: "usage by model", Prefix: "agent_usage_by_model", Scope: ScopeBucket, Suffix: "<YYYY-MM-DD>",
		Pattern: "agent_usage_by_model:[0-9]*", ClusterPattern: "agent_usage_by_model:{b*}:[0-9]*",
		Kind: KindHash, Owner: "usage", TTL: RetentionTTL,
		Reason:      "`USAGE_BY_MODEL_DAYS` + 1 days from its day; at most `USAGE_MAX_MODELS_PER_DAY` model names, then `other`",
		Description: "one UTC day's totals per model (`agent_usage_by_model:<YYYY-MM-DD>`, fields `<model>\\t<total>`), read by `GET /v1/sessions/cost-by-model?days=`",
	})
)

// EventsChannelFamily gives its patterns, as every channel does: a channel
// is named after the stream key it wakes (EventsChannel), not by a scope.
var EventsChannelFamily = Register(Family{
	Name: "events", Prefix: "sidecar:events", Scope: ScopeChannel,
	Pattern: EventsChannelPrefix + "*", ClusterPattern: EventsChannelPrefix + "*",
	Kind: KindChannel, Owner: "shared", TTL: Permanent,
	Reason:      "a Pub/Sub channel, not a key: it holds nothing",
	Description: "one channel per event stream (`sidecar:events:<stream key>`), an empty message for every event a write appends; a sidecar subscribes to the channels of the streams its clients watch, only while they do, and wakes its readers of that stream",
})
