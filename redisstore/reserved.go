package redisstore

import (
	"slices"
	"strings"
)

func family(key string) string {
	f, _, _ := strings.Cut(key, ":")
	return f
}

// Reserved reports whether name is one of the sidecar's own key families, or
// a key inside one: a family name (agent_sessions, agent_usage_totals,
// sidecar, ... see ReservedNames) alone or followed by ':'. Keys that other
// code names freely (a lock's key is the bare lock name, as in redis-py)
// must not be reserved: with the name agent_usage_totals a lock would take
// the global usage totals.
//
// The reserved names are the first segments (up to the first ':') of the
// Prefix of every registered family and channel (Register keeps them): a
// family registered is reserved with it.
func Reserved(name string) bool {
	registry.RLock()
	defer registry.RUnlock()
	return registry.reserved[family(name)]
}

// ReservedNames lists the reserved family names, sorted.
func ReservedNames() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.reserved))
	for f := range registry.reserved {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}
