// Package redisstore is what every module shares about Redis: the one
// connection (Conn: REDIS_URL or Cognee's CACHE_* variables, TLS, ACL, Redis
// Cluster, the embedded miniredis), outage classification (Wrap,
// IsUnavailable: the host answers 503), a store's refusals (ErrNotFound and
// its kin: the host answers 404/409/412), and the keyspace.
//
// # The keyspace
//
// Every key and channel the sidecar writes belongs to a Family, declared
// once with its scope, prefix and TTL policy by the package that owns it
// (Register, in a package-level var of the module's keys.go; the families
// every session write shares are in families.go). Families() lists them;
// docs/keyspace.md is the same table for operators. A module never builds a
// key name by hand: Layout.SessionKey, UserKey and BucketKey derive it from
// the family, and the keyspace test drives every route and checks that each
// key in Redis matches a family and has a TTL unless the family is declared
// permanent (with the reason). SessionPrefixes gives the scripts the session
// families, so a session's TTL slide and delete reach a module's own session
// keys.
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
//
// Files:
//   - options.go: Options: REDIS_URL or Cognee's CACHE_* (AUTH, ACL, TLS,
//     cluster addresses), validation, Redacted for logs.
//   - conn.go: Conn: the background dial with backoff, the embedded
//     miniredis on the wall clock, a health check every HealthInterval,
//     client renewal after an outage, refusals remembered for /readyz.
//   - errors.go: ErrUnavailable, Wrap and IsUnavailable (outages); the
//     store's refusals (ErrNotFound, ErrConflict, ErrPrecondition, Refuse,
//     NotFound); Redis's own (Refused: OOM, READONLY, BUSY...); WrongType
//     and its 409 key_wrong_type.
//   - keys.go: Layout: Cognee's names on standalone, every key of a user
//     tagged {b<N>} on Cluster (N = FNV-1a(user) mod Buckets); SessionKeys,
//     GlobalKeys, ValidID.
//   - family.go: Family (scope, prefix, kind, TTL policy), Register,
//     Families, SessionPrefixes, Layout.SessionKey, UserKey, BucketKey,
//     Match.
//   - owner.go: Owner, a module's session and user families in one line
//     each.
//   - families.go: the families every session write shares (entries, traces,
//     context, record, id indexes, usage ids, events, search index, messages
//     read by the registry, lifecycle indexes, totals, the events channel);
//     a module's own are in its keys.go.
//   - marker.go: the user's marker (UserMarkerFamily) and
//     RegisterMarkerField, the fields modules add to it.
//   - keys_events.go, keys_search.go, keys_registry.go: builders of the
//     event streams and their channel (EventsChannel), the search index's
//     keys, the metadata indexes.
//   - reserved.go: Reserved, the names no lock may take (the first segment
//     of every family's prefix).
//
// Tests: keyspace_test.go checks the families (well-formed, refusals,
// builders matching exactly their family on both layouts, strays matching
// none) and that docs/keyspace.md's table and marker fields equal them
// (-update rewrites it); cluster_test.go the layout's slots; conn_test.go
// every backend, the embedded TTLs, outage and WRONGTYPE classification;
// options_test.go parsing, TLS and redaction; reserved_test.go the reserved
// names; export_test.go opens internals to them; main_test.go shares one
// cluster.
package redisstore
