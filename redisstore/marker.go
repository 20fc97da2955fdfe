package redisstore

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The user's marker is one hash per user that every session write reads
// in one command with the record (lua/lib/session.lua, begin): the core's
// fields (fence, keys) and the fields modules register here. It is named
// by the user's SHA1 (Layout.UserMarker), so that it may outlive an erasure
// without naming the user.
var UserMarkerFamily = Register(Family{
	Name: "user marker", Prefix: "agent_user_marker", Scope: ScopeUser,
	Pattern: "agent_user_marker:*", ClusterPattern: "agent_user_marker:{b*}:*",
	Kind: KindHash, Owner: "shared", TTL: UserTTL,
	Description: "the user's marker, named by the SHA1 of the user id, read by every session write with the record: " +
		"`fence` (while set, `<code> <text>`: every write of the user is refused with it; the erasure's), " +
		"`keys` (JSON: the user's keys that live as long as the user's sessions, which every slide extends), " +
		"and the fields modules register (docs/keyspace.md, \"Marker fields\")",
})

// MarkerField is a field of the user's marker a module registers: every
// session write reads it with the record (no command of its own), as
// c.marks[name] in the scripts.
type MarkerField struct {
	// Name is the field; a per-session field is "<name>:<session id>" in
	// the marker, removed with the session.
	Name        string
	PerSession  bool
	Owner       string
	Description string
}

var markers struct {
	sync.RWMutex
	fields []MarkerField
}

// coreMarkerFields are the marker's fields lua/lib/marker.lua and
// lifecycle.lua keep.
var coreMarkerFields = map[string]bool{"fence": true, "keys": true, "persisted": true, "ttl_max": true, "unpersist": true}

// RegisterMarkerField adds a field of the user's marker; call it from a
// package-level var, as Register. It panics on a bad or repeated name.
func RegisterMarkerField(f MarkerField) MarkerField {
	if f.Name == "" || strings.ContainsAny(f.Name, ": \t") || coreMarkerFields[f.Name] || f.Owner == "" || f.Description == "" {
		panic(fmt.Sprintf("redisstore.RegisterMarkerField: field %+v: a name without ':' or spaces, none of the core's (fence, keys, persisted, ttl_max, unpersist), an owner and a description", f))
	}
	markers.Lock()
	defer markers.Unlock()
	for _, g := range markers.fields {
		if g.Name == f.Name {
			panic(fmt.Sprintf("redisstore.RegisterMarkerField: field %q registered twice", f.Name))
		}
	}
	markers.fields = append(markers.fields, f)
	slices.SortFunc(markers.fields, func(a, b MarkerField) int { return strings.Compare(a.Name, b.Name) })
	return f
}

// MarkerFields returns the registered fields of the user's marker, by name.
func MarkerFields() []MarkerField {
	markers.RLock()
	defer markers.RUnlock()
	return slices.Clone(markers.fields)
}

// UserMarker is user's marker key: agent_user_marker:<tag><sha1 of user>.
func (l Layout) UserMarker(user string) string {
	sum := sha1.Sum([]byte(user))
	return UserMarkerFamily.Prefix + ":" + l.tag(l.Bucket(user)) + hex.EncodeToString(sum[:])
}
