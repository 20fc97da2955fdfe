package redisstore

// The metadata indexes: the registry module writes them (through the
// session scripts), the shared listings read them (sessionstore), so their
// builders are shared. The registry's own keys are in registry/keys.go.

// MetaIndex is the user's index of sessions whose metadata holds key=value:
// agent_session_meta:<tag><u>:<key>=<value>, a sorted set of session ids
// scored by last activity (µs), an activity index of the session core
// (lua/lib/session.lua, index_in). Its TTL is that of its longest-lived
// session; members of expired sessions are dropped by the core's
// bookkeeping and lazily on read (lua/session_meta_prune.lua).
func (l Layout) MetaIndex(user, key, value string) string {
	return l.UserKey(MetaIndexFamily, user, key+"="+value)
}

// MetaGlobal is the same across the users of shard bucket (members
// "<u>:<s>"): agent_session_meta_global:<tag><key>=<value>.
func (l Layout) MetaGlobal(bucket int, key, value string) string {
	return l.BucketKey(MetaGlobalFamily, bucket, key+"="+value)
}
