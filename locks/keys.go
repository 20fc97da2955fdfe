package locks

import "github.com/agentsidecar/agentsidecar/redisstore"

// The module's key families. A lock's keys are named by the caller, as
// redis-py's Lock names them, so they have no prefix and their patterns
// are given here rather than derived: the lock key is the bare name ("*":
// any key of id characters no other family matches, redisstore.Layout.
// MatchAll), its companions carry the name as a hash tag ("{*}:fence",
// "{*}:meta"), and the release channel is one fixed name.
var (
	LockFamily = redisstore.Register(redisstore.Family{
		Name: "lock", Scope: redisstore.ScopeLock, Pattern: "*", ClusterPattern: "*",
		Kind: redisstore.KindString, Owner: "locks", TTL: redisstore.LockTTL,
		Description: "the lock's name itself (any key of 1–128 `[A-Za-z0-9_.@-]` no other row matches), holding the holder's token, as redis-py's Lock has it",
	})
	FenceFamily = redisstore.Register(redisstore.Family{
		Name: "lock fence", Scope: redisstore.ScopeLock, Pattern: "{*}:fence", ClusterPattern: "{*}:fence",
		Kind: redisstore.KindString, Owner: "locks", TTL: redisstore.RetentionTTL,
		Reason:      "48 h after the name's last grant (twice the longest lease), so tokens grow for as long as a stale holder could act",
		Description: "the lock's last fencing token, max(last + 1, Redis TIME in µs)",
	})
	MetaFamily = redisstore.Register(redisstore.Family{
		Name: "lock meta", Scope: redisstore.ScopeLock, Pattern: "{*}:meta", ClusterPattern: "{*}:meta",
		Kind: redisstore.KindHash, Owner: "locks", TTL: redisstore.LockTTL,
		Description: "token, owner, fence and TTL of a sidecar holder (none for a redis-py holder)",
	})
	ReleasesFamily = redisstore.Register(redisstore.Family{
		Name: "lock releases", Prefix: ReleaseChannel, Scope: redisstore.ScopeChannel,
		Pattern: ReleaseChannel, ClusterPattern: ReleaseChannel,
		Kind: redisstore.KindChannel, Owner: "locks", TTL: redisstore.Permanent,
		Reason:      "a Pub/Sub channel, not a key: it holds nothing",
		Description: "the name of every lock a release frees; each sidecar subscribes once and wakes its waiters",
	})
)

// ReleaseChannel is the Pub/Sub channel on which the release script
// publishes the name of every lock it frees; each sidecar subscribes once
// and wakes its waiters for that name.
const ReleaseChannel = "sidecar:locks:released"

// Keys are the keys of the lock named name. The lock key is the name
// itself, as redis-py's Lock has it, so Python and sidecar callers exclude
// each other. Companions carry the name as a hash tag: names cannot contain
// braces, so "{n}:fence" hashes exactly like "n" and every key of one lock
// lives in one Redis Cluster slot (on both layouts).
type Keys struct {
	Lock  string // <name>: the holder's token (SET NX PX)
	Fence string // {<name>}:fence: the last fencing token (expires FenceTTL after the last grant)
	Meta  string // {<name>}:meta: owner, fence and TTL of a sidecar holder (hash)
}

// KeysOf returns the keys of lock name.
func KeysOf(name string) Keys {
	return Keys{Lock: name, Fence: "{" + name + "}:fence", Meta: "{" + name + "}:meta"}
}
