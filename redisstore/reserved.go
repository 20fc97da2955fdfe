package redisstore

import (
	"slices"
	"strings"
)

// reserved holds the first segment (up to the first ':') of every key name
// and Pub/Sub channel the sidecar uses, on both layouts. It is derived from
// the builders above, so a key family a builder starts using is reserved
// with it.
var reserved = func() map[string]bool {
	var names []string
	for _, l := range []Layout{{}, {Cluster: true}} {
		names = append(names, l.Session("u", "s").List()...)
		names = append(names, l.blockKeys("u", "s")...)
		for b := range l.Buckets() {
			g := l.Global(b)
			names = append(names, g.Index[:]...)
			names = append(names, g.Expiry, g.Totals, g.ByModel, g.RecordPrefix, g.UserIndexPrefix)
		}
	}
	names = append(names, LockReleaseChannel)
	out := map[string]bool{}
	for _, n := range names {
		out[family(n)] = true
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
