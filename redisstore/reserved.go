package redisstore

import (
	"slices"
	"strings"
)

// reserved holds the first segment (up to the first ':') of every key
// family and Pub/Sub channel the sidecar uses, on both layouts, taken from
// Families: a family added there is reserved with it.
var reserved = func() map[string]bool {
	out := map[string]bool{}
	for _, f := range Families {
		for _, p := range []string{f.Pattern, f.ClusterPattern} {
			if name := family(p); !strings.ContainsAny(name, "*?[{") {
				out[name] = true
			}
		}
	}
	return out
}()

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
func Reserved(name string) bool { return reserved[family(name)] }

// ReservedNames lists the reserved family names, sorted.
func ReservedNames() []string {
	out := make([]string, 0, len(reserved))
	for f := range reserved {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}
