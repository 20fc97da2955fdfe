package redisstore

import (
	"hash/fnv"
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
// lua/lib/session.lua: the session's own keys, then the indexes and totals
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
	g := l.Global(l.Bucket(user))
	return SessionKeys{
		Entries:      l.SessionKey(EntriesFamily, user, session),
		Traces:       l.SessionKey(TracesFamily, user, session),
		Context:      l.SessionKey(ContextFamily, user, session),
		Record:       l.SessionKey(RecordFamily, user, session),
		Index:        l.SessionKey(QAIndexFamily, user, session),
		Usage:        l.SessionKey(UsageIDsFamily, user, session),
		ContextIndex: l.SessionKey(ContextIndexFamily, user, session),
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
	for i, s := range IndexStatuses {
		out[i] = l.UserKey(UserIndexFamily, user, s)
	}
	return out
}

// Global returns the keys of shard bucket (0 <= bucket < Buckets()) of the
// data across users.
func (l Layout) Global(bucket int) GlobalKeys {
	tag := l.tag(bucket)
	g := GlobalKeys{
		Expiry: l.BucketKey(ExpiryFamily, bucket, "expiry"),
		Totals: l.BucketKey(TotalsFamily, bucket),
		// The by-model prefix is its day keys' name without the day.
		ByModel:         strings.TrimSuffix(l.BucketKey(ByModelFamily, bucket, ""), ":"),
		RecordPrefix:    RecordFamily.Prefix + ":" + tag,
		UserIndexPrefix: UserIndexFamily.Prefix + ":" + tag,
	}
	for i, s := range IndexStatuses {
		g.Index[i] = l.BucketKey(GlobalIndexFamily, bucket, s)
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
