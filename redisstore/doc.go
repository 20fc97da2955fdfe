// Package redisstore is what every module shares about Redis: the one
// connection (Conn: REDIS_URL or Cognee's CACHE_* variables, TLS, ACL,
// Redis Cluster, the embedded miniredis), outage classification (Wrap,
// IsUnavailable: the host answers 503), a store's refusals (ErrNotFound and
// its kin: the host answers 404/409/412), and the keyspace.
//
// # The keyspace
//
// Every key and channel the sidecar writes belongs to a Family, declared
// once with its scope, prefix and TTL policy by the package that owns it
// (Register, in a package-level var of the module's keys.go; the families
// every session write shares are in families.go). Families() lists them;
// docs/keyspace.md is the same table for operators. A module never builds
// a key name by hand: Layout.SessionKey, UserKey and BucketKey derive it
// from the family, and the keyspace test drives every route and checks
// that each key in Redis matches a family and has a TTL unless the family
// is declared permanent (with the reason). SessionPrefixes gives the
// scripts the session families, so a session's TTL slide and delete reach
// a module's own session keys.
//
// # Scripts and Cluster
//
// Every write is one Lua script (package lua, one .lua file per operation),
// called as a Redis Function (FCALL) where Redis has them, else by EVALSHA.
// A script may touch only keys of one hash slot: on Redis Cluster every key
// of a user carries the tag {b<N>} of the user's bucket, and a lock's
// companions carry the lock's name as their tag. Reads across users fan out
// over the buckets and merge. Module stores live next to their handlers
// (sessions/store.go, locks/store.go); this package keeps only what every
// module shares.
package redisstore
