package redisstore

import (
	"hash/fnv"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Layout builds every key name the sidecar uses.
//
// Standalone Redis (Cluster false) keeps Cognee's names exactly, so Cognee
// processes share the sessions: agent_sessions:<u>:<s> and the sidecar's
// own keys beside them, with one set of global indexes and totals.
//
// Redis Cluster (Cluster true) puts a bucket hash tag in every key:
// {b<N>} with N = Bucket(user_id), a stable hash of the user id modulo
// Buckets. A session's own keys, its user's indexes and the bucket's shard
// of the global indexes, expiry set and usage totals therefore share one
// hash slot, so every session script touches one slot; reads across users
// (listing, stats, cost by model, the sweep) fan out over the Buckets
// shards and merge. Ids cannot contain braces or ':', so tags never collide.
//
// The layout follows the connection: Cluster when rueidis connected in
// cluster mode (Conn.Cluster). Cognee does not run on Redis Cluster.
type Layout struct {
	Cluster bool
}

// Buckets is the number of hash-tagged shards of the cluster layout. It is
// part of the key names: changing it re-homes every user's data (existing
// sessions are no longer found), so it is a constant, not a setting. 64
// spreads the load over up to 64 masters and keeps a read across users at
// 64 small commands, pipelined per node.
const Buckets = 64

// SessionKeys are the keys one session script takes, in the order of
// lua/session_lib.lua: the session's own keys, then the indexes and totals
// its writes keep current.
type SessionKeys struct {
	Entries string // agent_sessions:<u>:<s>: Cognee's Q&A list
	Traces  string // agent_traces:<u>:<s>: Cognee's trace list
	Context string // session_context:<u>:<s>: Cognee's session-context list
	Record  string // agent_session_record:<u>:<s>: status, activity, usage, TTL (hash)
	Index   string // agent_session_qa_index:<u>:<s>: qa_id -> position (hash)
	Usage   string // agent_session_usage_ids:<u>:<s>: Idempotency-Key -> first result (hash)
	// ContextIndex is agent_session_context_index:<u>:<s>: context entry
	// id -> position (hash). The scripts derive it from Index (it is not
	// one of their KEYS); it slides and is deleted with the session.
	ContextIndex string

	// Sorted sets of the user's sessions scored by last activity (µs), one
	// per stored status: running, completed, failed. "abandoned" is a score
	// range of the running set; "any status" merges the three on read.
	UserIndex [3]string
	// The same across users (members "<user_id>:<session_id>"): on Cluster,
	// the shard of the user's bucket.
	GlobalIndex [3]string
	Expiry      string // agent_sessions_global:expiry: member -> expiry time (µs), to drop expired sessions from the indexes
	Totals      string // agent_usage_totals: tokens, nano-USD, calls, errors (hash)
	// ByModel is agent_usage_by_model: the prefix of the per-day model
	// totals (GlobalKeys.ByModelDay), which the usage script derives from
	// it. Versions before them kept all-time totals in a hash of this very
	// name; nothing reads or writes that hash any more.
	ByModel string
}

// GlobalKeys are the keys of one shard of the data across users (the only
// one on standalone Redis).
type GlobalKeys struct {
	Index   [3]string // sessions by last activity, by stored status
	Expiry  string
	Totals  string
	ByModel string // prefix of ByModelDay
	// Prefixes the sweep derives a member's keys from: record prefix +
	// "<u>:<s>", user index prefix + "<u>:<status>".
	RecordPrefix, UserIndexPrefix string
}

// IndexStatuses names the three sorted sets of UserIndex and GlobalIndex.
var IndexStatuses = [3]string{"running", "completed", "failed"}

// Buckets is the number of shards of the data across users: 1 on
// standalone Redis, the constant Buckets on Cluster.
func (l Layout) Buckets() int {
	if l.Cluster {
		return Buckets
	}
	return 1
}

// Bucket is the shard of user: FNV-1a (32 bit) of the user id modulo
// Buckets on Cluster, 0 on standalone Redis.
func (l Layout) Bucket(user string) int {
	if !l.Cluster {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(user))
	return int(h.Sum32() % Buckets)
}

// tag is what follows a key's prefix: "" on standalone, "{b<N>}:" on Cluster.
func (l Layout) tag(bucket int) string {
	if !l.Cluster {
		return ""
	}
	return "{b" + strconv.Itoa(bucket) + "}:"
}

// Session returns the keys of session (user, session).
func (l Layout) Session(user, session string) SessionKeys {
	b := l.Bucket(user)
	tag := l.tag(b)
	id := tag + user + ":" + session
	g := l.Global(b)
	return SessionKeys{
		Entries:      "agent_sessions:" + id,
		Traces:       "agent_traces:" + id,
		Context:      "session_context:" + id,
		Record:       "agent_session_record:" + id,
		Index:        "agent_session_qa_index:" + id,
		Usage:        "agent_session_usage_ids:" + id,
		ContextIndex: "agent_session_context_index:" + id,
		UserIndex:    l.UserIndex(user),
		GlobalIndex:  g.Index,
		Expiry:       g.Expiry,
		Totals:       g.Totals,
		ByModel:      g.ByModel,
	}
}

// UserIndex returns the user's three session indexes.
func (l Layout) UserIndex(user string) [3]string {
	var out [3]string
	p := "agent_sessions_by_user:" + l.tag(l.Bucket(user)) + user + ":"
	for i, s := range IndexStatuses {
		out[i] = p + s
	}
	return out
}

// Global returns the keys of shard bucket (0 <= bucket < Buckets()) of the
// data across users.
func (l Layout) Global(bucket int) GlobalKeys {
	tag := l.tag(bucket)
	g := GlobalKeys{
		Expiry:          "agent_sessions_global:" + tag + "expiry",
		Totals:          "agent_usage_totals",
		ByModel:         "agent_usage_by_model",
		RecordPrefix:    "agent_session_record:" + tag,
		UserIndexPrefix: "agent_sessions_by_user:" + tag,
	}
	if l.Cluster {
		g.Totals += ":" + tag[:len(tag)-1]
		g.ByModel += ":" + tag[:len(tag)-1]
	}
	for i, s := range IndexStatuses {
		g.Index[i] = "agent_sessions_global:" + tag + s
	}
	return g
}

// ByModelDay is the shard's per-model totals of one UTC day, a hash
// "<model>\t<field>" -> total plus "#models" (distinct names counted, at
// most USAGE_MAX_MODELS_PER_DAY; later new names count as "other"), with a
// TTL of USAGE_BY_MODEL_DAYS + 1 days from its last write:
// agent_usage_by_model:2026-11-23 (agent_usage_by_model:{b7}:2026-11-23 on
// Cluster, in the slot of the bucket's other keys).
func (g GlobalKeys) ByModelDay(day time.Time) string {
	return g.ByModel + ":" + day.UTC().Format(time.DateOnly)
}

// Own returns the keys that belong to the session alone (what a delete
// removes and a TTL slide moves).
func (k SessionKeys) Own() []string {
	return []string{k.Entries, k.Traces, k.Context, k.Record, k.Index, k.Usage}
}

// List returns every key in script order.
func (k SessionKeys) List() []string {
	out := append(k.Own(), k.UserIndex[:]...)
	out = append(out, k.GlobalIndex[:]...)
	return append(out, k.Expiry, k.Totals, k.ByModel)
}

// LockKeys are the keys of the lock named name. The lock key is the name
// itself, as redis-py's Lock has it, so Python and sidecar callers exclude
// each other. Companions carry the name as a hash tag: names cannot contain
// braces, so "{n}:fence" hashes exactly like "n" and every key of one lock
// lives in one Redis Cluster slot (on both layouts).
type LockKeys struct {
	Lock  string // <name>: the holder's token (SET NX PX)
	Fence string // {<name>}:fence: the last fencing token (expires FenceTTL after the last grant)
	Meta  string // {<name>}:meta: owner, fence and TTL of a sidecar holder (hash)
}

// Lock returns the keys of lock name.
func Lock(name string) LockKeys {
	return LockKeys{Lock: name, Fence: "{" + name + "}:fence", Meta: "{" + name + "}:meta"}
}

// LockReleaseChannel is the Pub/Sub channel on which the release script
// publishes the name of every lock it frees; each sidecar subscribes once
// and wakes its waiters for that name.
const LockReleaseChannel = "sidecar:locks:released"

// Kind is the Redis type of a family's keys, as TYPE names it, or
// KindChannel for a Pub/Sub channel (which is not a key).
type Kind string

// The kinds of the keyspace.
const (
	KindString  Kind = "string"
	KindList    Kind = "list"
	KindHash    Kind = "hash"
	KindZSet    Kind = "zset"
	KindStream  Kind = "stream"
	KindChannel Kind = "channel"
)

// TTLPolicy says how the keys of a family expire.
type TTLPolicy int

const (
	// SessionTTL: every key of the session gets the session's TTL in the
	// write's script and every write slides it (docs/sessions.md, TTL
	// rules). The TTL is SESSION_TTL_SECONDS, or the session's own from
	// PUT .../ttl; 0 there means no expiry, by the operator's or the
	// caller's choice.
	SessionTTL TTLPolicy = iota + 1
	// LockTTL: the lock's TTL (SET PX, PEXPIRE on refresh); release
	// deletes the key.
	LockTTL
	// Permanent: no TTL, by design. The family's Reason says why and what
	// bounds it.
	Permanent
	// TemporaryException: keys of the family can be left without a TTL
	// today, by the defect its Reason names. The fix removes the family
	// from this policy.
	TemporaryException
	// RetentionTTL: a fixed TTL set when the key is first written, its
	// retention; the family's Reason says how long.
	RetentionTTL
)

// String is the policy as docs/keyspace.md names it.
func (p TTLPolicy) String() string {
	switch p {
	case SessionTTL:
		return "session TTL"
	case LockTTL:
		return "lock TTL"
	case Permanent:
		return "permanent"
	case TemporaryException:
		return "temporary exception"
	case RetentionTTL:
		return "retention TTL"
	}
	return "TTLPolicy(" + strconv.Itoa(int(p)) + ")"
}

// Family is one kind of key (or channel) the sidecar writes.
type Family struct {
	Name string
	// Pattern and ClusterPattern are globs of the family's names on each
	// layout, usable with SCAN MATCH (redis-cli --scan --pattern) and
	// path.Match. Layout.Glob picks the layout's.
	Pattern, ClusterPattern string
	Kind                    Kind
	// Owner is the module whose routes write the family, or "shared": every
	// session write (modules sessions, ttl, usage) keeps it current through
	// lua/session_lib.lua.
	Owner string
	// Cognee: Cognee's own name; Cognee reads and writes these keys too
	// (standalone Redis only).
	Cognee bool
	TTL    TTLPolicy
	// Reason says, for Permanent, why the keys have no TTL and what bounds
	// them; for TemporaryException, the defect that leaves keys without one.
	Reason      string
	Description string

	// bare: the name is the caller's own (a lock name): any key of id
	// characters that no other family matches.
	bare bool
}

// indexBound is why the sorted sets of sessions need no TTL.
const indexBound = "bounded by the live sessions: a delete removes the session's members, " +
	"the expiry sweep those of expired sessions"

// Families is every key family and channel the sidecar writes, in the
// order of docs/keyspace.md (a test keeps the two equal). A new kind of key
// is added here first; the keyspace test (cmd/sidecar) drives every route
// and fails on a key in Redis that no family matches, or that lacks a TTL
// its family promises.
var Families = []Family{
	{
		Name: "entries", Pattern: "agent_sessions:*:*", ClusterPattern: "agent_sessions:{b*}:*:*",
		Kind: KindList, Owner: "sessions", Cognee: true, TTL: SessionTTL,
		Description: "a session's Q&A entries, oldest first, one JSON object each; trimmed to `SESSION_MAX_ENTRIES`",
	},
	{
		Name: "traces", Pattern: "agent_traces:*:*", ClusterPattern: "agent_traces:{b*}:*:*",
		Kind: KindList, Owner: "sessions", Cognee: true, TTL: SessionTTL,
		Description: "a session's agent trace entries, oldest first; trimmed to `SESSION_MAX_ENTRIES`",
	},
	{
		Name: "context", Pattern: "session_context:*:*", ClusterPattern: "session_context:{b*}:*:*",
		Kind: KindList, Owner: "sessions", Cognee: true, TTL: SessionTTL,
		Description: "a session's context objects (each with an `id`); trimmed to `SESSION_MAX_ENTRIES`",
	},
	{
		Name: "record", Pattern: "agent_session_record:*:*", ClusterPattern: "agent_session_record:{b*}:*:*",
		Kind: KindHash, Owner: "shared", TTL: SessionTTL,
		Description: "a session's status, start, last activity and end (Redis TIME, µs), entry count, usage and cost (per model too), its own TTL",
	},
	{
		Name: "qa index", Pattern: "agent_session_qa_index:*:*", ClusterPattern: "agent_session_qa_index:{b*}:*:*",
		Kind: KindHash, Owner: "sessions", TTL: SessionTTL,
		Description: "`qa_id` → position in the entries list, so reading, updating or deleting one entry is O(1)",
	},
	{
		Name: "context index", Pattern: "agent_session_context_index:*:*", ClusterPattern: "agent_session_context_index:{b*}:*:*",
		Kind: KindHash, Owner: "sessions", TTL: SessionTTL,
		Description: "context entry `id` → position in the context list, so appending, updating or deleting one context entry is O(1)",
	},
	{
		Name: "usage ids", Pattern: "agent_session_usage_ids:*:*", ClusterPattern: "agent_session_usage_ids:{b*}:*:*",
		Kind: KindHash, Owner: "usage", TTL: SessionTTL,
		Description: "`Idempotency-Key` → the first answer of `POST .../usage`, so a retried call counts once",
	},
	{
		Name: "user index", Pattern: "agent_sessions_by_user:*:*", ClusterPattern: "agent_sessions_by_user:{b*}:*:*",
		Kind: KindZSet, Owner: "shared", TTL: Permanent, Reason: indexBound,
		Description: "a user's session ids by last activity (µs), one set per stored status: `running`, `completed`, `failed`",
	},
	{
		Name: "metadata index", Pattern: "agent_session_meta:*", ClusterPattern: "agent_session_meta:{b*}:*",
		Kind: KindZSet, Owner: "registry", TTL: SessionTTL,
		Description: "a user's session ids whose metadata holds `<key>=<value>` (`agent_session_meta:<u>:<key>=<value>`), by last activity; members of expired sessions dropped on read and by the writes of the pair's sessions (two examined per sliding write)",
	},
	{
		Name: "global metadata index", Pattern: "agent_session_meta_global:*", ClusterPattern: "agent_session_meta_global:{b*}:*",
		Kind: KindZSet, Owner: "registry", TTL: SessionTTL,
		Description: "the same across users (members `<u>:<s>`), one per bucket on Cluster",
	},
	{
		Name: "session state", Pattern: "agent_session_state:*", ClusterPattern: "agent_session_state:{b*}:*",
		Kind: KindString, Owner: "registry", TTL: SessionTTL,
		Description: "the session's state object (JSON, at most 64 KiB), changed by JSON merge patch",
	},
	{
		Name: "messages", Pattern: "agent_session_msgs:*:*", ClusterPattern: "agent_session_msgs:{b*}:*:*",
		Kind: KindHash, Owner: "messages", TTL: SessionTTL,
		Description: "a session's messages, every branch: message id → the message's JSON as answered (`item` as sent); at most `SESSION_MAX_MESSAGES`",
	},
	{
		Name: "message tree", Pattern: "agent_session_msg_tree:*:*", ClusterPattern: "agent_session_msg_tree:{b*}:*:*",
		Kind: KindHash, Owner: "messages", TTL: SessionTTL,
		Description: "message id → its parent, jump pointer, depth, path tokens, append number, tokens and fingerprint, so a page of a path costs O(limit + log n)",
	},
	{
		Name: "message children", Pattern: "agent_session_msg_children:*:*", ClusterPattern: "agent_session_msg_children:{b*}:*:*",
		Kind: KindZSet, Owner: "messages", TTL: SessionTTL,
		Description: "one member `<parent>\\0<append number>\\0<id>` per message (score 0, read by lex range): a message's branches, oldest first",
	},
	{
		Name: "message order", Pattern: "agent_session_msg_order:*:*", ClusterPattern: "agent_session_msg_order:{b*}:*:*",
		Kind: KindZSet, Owner: "messages", TTL: SessionTTL,
		Description: "message id → append number: the message count and the newest message left",
	},
	{
		Name: "message keys", Pattern: "agent_session_msg_keys:*:*", ClusterPattern: "agent_session_msg_keys:{b*}:*:*",
		Kind: KindHash, Owner: "messages", TTL: SessionTTL,
		Description: "`Idempotency-Key` → the ids an append stored, the 1 000 newest keys, so a retried append stores nothing",
	},
	{
		Name: "compactions", Pattern: "agent_session_compactions:*:*", ClusterPattern: "agent_session_compactions:{b*}:*:*",
		Kind: KindHash, Owner: "messages", TTL: SessionTTL,
		Description: "a session's compactions in force (at most 100): id → `{id, summary, from_id, to_id, created_at}`, `#<id>` → its range and summary tokens",
	},
	{
		Name: "search postings", Pattern: "agent_search:*:*", ClusterPattern: "agent_search:{b*}:*:*",
		Kind: KindZSet, Owner: "messages", TTL: SessionTTL,
		Description: "a user's postings of one term (`agent_search:<u>:<stem>`): `<s>\\t<kind>\\t<id>\\t<version>\\t<tf>\\t<length>` by time; lives as long as the longest-lived session it holds; stale postings dropped by the queries that meet them",
	},
	{
		Name: "search documents", Pattern: "agent_search_docs:*:*", ClusterPattern: "agent_search_docs:{b*}:*:*",
		Kind: KindHash, Owner: "messages", TTL: SessionTTL,
		Description: "a session's indexed messages: `message\\t<id>` → version, length, time, a digest of its words and the first 600 characters of its text (for snippets)",
	},
	{
		Name: "search entry documents", Pattern: "agent_search_entry_docs:*:*", ClusterPattern: "agent_search_entry_docs:{b*}:*:*",
		Kind: KindHash, Owner: "sessions", TTL: SessionTTL,
		Description: "a session's indexed Q&A entries: `entry\\t<qa_id>` → version, length, time, a digest of its words and the first 600 characters of its question, answer and context; ` cov` → how many of the entries list's first entries are indexed (only those have documents); ` since`, ` refresh`: when the index last took the list in from its start, and the cursor of a refresh under way (entries another program appended after them are indexed when the sidecar next writes or searches the session)",
	},
	{
		Name: "search statistics", Pattern: "agent_search_stats:*", ClusterPattern: "agent_search_stats:{b*}:*",
		Kind: KindHash, Owner: "messages", TTL: SessionTTL,
		Description: "a user's indexed documents and their total length, for BM25",
	},
	{
		Name: "user state", Pattern: "agent_user_state:*", ClusterPattern: "agent_user_state:{b*}:*",
		Kind: KindString, Owner: "registry", TTL: RetentionTTL,
		Reason:      "at least `SESSION_TTL_SECONDS` from its last write, and at least the TTL of each of the user's sessions from its last write (none while one of them has none)",
		Description: "the user's state object (JSON, at most 64 KiB), changed by JSON merge patch",
	},
	{
		Name: "session blocks", Pattern: "agent_session_blocks:*", ClusterPattern: "agent_session_blocks:{b*}:*",
		Kind: KindHash, Owner: "blocks", TTL: SessionTTL,
		Description: "a session's context blocks: label → the block (a JSON object); nothing else, so a fork copies the key",
	},
	{
		Name: "frozen prompt", Pattern: "agent_session_prompt:*", ClusterPattern: "agent_session_prompt:{b*}:*",
		Kind: KindHash, Owner: "blocks", TTL: SessionTTL,
		Description: "a session's frozen system prompt: `prompt`, `tokens`, `frozen_at` (µs), kept until `POST .../system-prompt/refresh`",
	},
	{
		Name: "tool calls", Pattern: "agent_session_tool_calls:*", ClusterPattern: "agent_session_tool_calls:{b*}:*",
		Kind: KindHash, Owner: "blocks", TTL: SessionTTL,
		Description: "`tool_call_id` → the first result of a tool call that wrote, the 1 000 newest ids, so a retried call writes once",
	},
	{
		Name: "user blocks", Pattern: "agent_user_blocks:*", ClusterPattern: "agent_user_blocks:{b*}:*",
		Kind: KindHash, Owner: "blocks", TTL: RetentionTTL,
		Reason:      "`SESSION_TTL_SECONDS` from the user's last block write (a user or session block, a tool call that wrote, a frozen prompt stored)",
		Description: "a user's context blocks, applying to every session of the user: label → the block (a JSON object)",
	},
	{
		Name: "session events", Pattern: "agent_session_events:*", ClusterPattern: "agent_session_events:{b*}:*",
		Kind: KindStream, Owner: "shared", TTL: SessionTTL,
		Description: "the session's live events (`id` = stream id, fields `t` type and `d` JSON data), `XADD MAXLEN ~ SESSION_EVENTS_MAXLEN` by every write's script; after a delete only the `deleted` event, for 300 s",
	},
	{
		Name: "event keys", Pattern: "agent_session_event_keys:*", ClusterPattern: "agent_session_event_keys:{b*}:*",
		Kind: KindHash, Owner: "events", TTL: SessionTTL,
		Description: "`Idempotency-Key` → the event id of a custom event (`POST .../events`), the 1 000 newest, so a retried publish writes once",
	},
	{
		Name: "user events", Pattern: "agent_user_events:*", ClusterPattern: "agent_user_events:{b*}:*",
		Kind: KindStream, Owner: "shared", TTL: RetentionTTL,
		Reason:      "`SESSION_TTL_SECONDS` from its last event; `MAXLEN ~ SESSION_EVENTS_MAXLEN`",
		Description: "the user's live events (user state and user-block changes), read by `GET /v1/users/{u}/events`",
	},
	{
		Name: "global index", Pattern: "agent_sessions_global:[rcf]*", ClusterPattern: "agent_sessions_global:{b*}:[rcf]*",
		Kind: KindZSet, Owner: "shared", TTL: Permanent, Reason: indexBound,
		Description: "every user's sessions (`<user_id>:<session_id>`) by last activity (µs), one set per stored status: `running`, `completed`, `failed`",
	},
	{
		Name: "expiry", Pattern: "agent_sessions_global:expiry", ClusterPattern: "agent_sessions_global:{b*}:expiry",
		Kind: KindZSet, Owner: "shared", TTL: Permanent, Reason: indexBound,
		Description: "`<user_id>:<session_id>` → when the session's keys expire (µs; `+inf` for none), for the sweep",
	},
	{
		Name: "usage totals", Pattern: "agent_usage_totals", ClusterPattern: "agent_usage_totals:{b*}",
		Kind: KindHash, Owner: "usage", TTL: Permanent,
		Reason:      "all-time totals, read by `GET /v1/sessions/stats` and the metrics module; five fields, constant size",
		Description: "tokens in and out, cost (nano-USD), calls and errors of every session ever",
	},
	{
		Name: "usage by model", Pattern: "agent_usage_by_model:[0-9]*", ClusterPattern: "agent_usage_by_model:{b*}:[0-9]*",
		Kind: KindHash, Owner: "usage", TTL: RetentionTTL,
		Reason:      "`USAGE_BY_MODEL_DAYS` + 1 days from its day; at most `USAGE_MAX_MODELS_PER_DAY` model names, then `other`",
		Description: "one UTC day's totals per model (`agent_usage_by_model:<YYYY-MM-DD>`, fields `<model>\\t<total>`), read by `GET /v1/sessions/cost-by-model?days=`",
	},
	{
		Name: "lock", Pattern: "*", ClusterPattern: "*",
		Kind: KindString, Owner: "locks", TTL: LockTTL, bare: true,
		Description: "the lock's name itself (any key of 1–128 `[A-Za-z0-9_.@-]` no other row matches), holding the holder's token, as redis-py's Lock has it",
	},
	{
		Name: "lock fence", Pattern: "{*}:fence", ClusterPattern: "{*}:fence",
		Kind: KindString, Owner: "locks", TTL: RetentionTTL,
		Reason:      "48 h after the name's last grant (twice the longest lease), so tokens grow for as long as a stale holder could act",
		Description: "the lock's last fencing token, max(last + 1, Redis TIME in µs)",
	},
	{
		Name: "lock meta", Pattern: "{*}:meta", ClusterPattern: "{*}:meta",
		Kind: KindHash, Owner: "locks", TTL: LockTTL,
		Description: "token, owner, fence and TTL of a sidecar holder (none for a redis-py holder)",
	},
	{
		Name: "events", Pattern: EventsChannelPrefix + "*", ClusterPattern: EventsChannelPrefix + "*",
		Kind: KindChannel, Owner: "shared", TTL: Permanent,
		Reason:      "a Pub/Sub channel, not a key: it holds nothing",
		Description: "one channel per event stream (`sidecar:events:<stream key>`), an empty message for every event a write appends; a sidecar subscribes to the channels of the streams its clients watch, only while they do, and wakes its readers of that stream",
	},
	{
		Name: "lock releases", Pattern: LockReleaseChannel, ClusterPattern: LockReleaseChannel,
		Kind: KindChannel, Owner: "locks", TTL: Permanent,
		Reason:      "a Pub/Sub channel, not a key: it holds nothing",
		Description: "the name of every lock a release frees; each sidecar subscribes once and wakes its waiters",
	},
}

// Glob is f's pattern on layout l.
func (l Layout) Glob(f Family) string {
	if l.Cluster {
		return f.ClusterPattern
	}
	return f.Pattern
}

// MatchAll returns every family whose pattern on layout l matches key (or
// channel name). A bare family (a lock name) matches only a key of id
// characters that no other family matches. More than one family is a
// fault of the layout.
func (l Layout) MatchAll(key string) []Family {
	var out []Family
	for _, f := range Families {
		if f.bare {
			continue
		}
		if ok, _ := path.Match(l.Glob(f), key); ok {
			out = append(out, f)
		}
	}
	if len(out) > 0 || !ValidID(key) {
		return out
	}
	for _, f := range Families {
		if f.bare {
			out = append(out, f)
		}
	}
	return out
}

// Match returns the one family of key (or channel name) on layout l, and
// false when no family, or more than one, matches.
func (l Layout) Match(key string) (Family, bool) {
	m := l.MatchAll(key)
	if len(m) != 1 {
		return Family{}, false
	}
	return m[0], true
}

// ValidID reports whether s is an id of the API (user, session, qa_id, lock
// name): 1–128 characters of [A-Za-z0-9_.@-], other than "." and "..". A
// ':' would let two user/session pairs map to one key and braces would
// change Redis Cluster hash slots, so both are refused; "." and ".." cannot
// travel in a URL path. The keyspace relies on it, so it lives here.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLength || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '_', c == '.', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}

// MaxIDLength is the longest id.
const MaxIDLength = 128

// SessionPrefixes returns the prefixes of the families of a session's own
// keys (<prefix>:<tag><u>:<s>), sorted: the scripts slide and delete every
// one of them with the session.
func SessionPrefixes() []string {
	var out []string
	for _, f := range Families {
		if f.TTL != SessionTTL || !strings.HasSuffix(f.Pattern, ":*") || strings.Contains(f.Pattern, "=") {
			continue
		}
		p, _, _ := strings.Cut(f.Pattern, ":")
		switch p {
		case "agent_session_meta", "agent_session_meta_global", "agent_search", "agent_search_stats":
			continue // the user's and the bucket's, not the session's
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
