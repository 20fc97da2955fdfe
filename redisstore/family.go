package redisstore

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
)

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
	// UserTTL: a user's key that lives as long as the user's sessions: the
	// user's marker lists it, and every slide of every session of the user
	// gives it at least that session's TTL (none while one of them has
	// none). The core slides it (lua/lib/session.lua, session.keep).
	UserTTL
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
	case UserTTL:
		return "user TTL"
	}
	return "TTLPolicy(" + strconv.Itoa(int(p)) + ")"
}

// Scope is whose data a family's keys hold, which fixes the shape of their
// names (and so their globs) on both layouts. <tag> is "" on standalone
// Redis and "{b<N>}:" on Cluster (N = Layout.Bucket(user)).
type Scope int

const (
	// ScopeSession: one key per session, <prefix>:<tag><u>:<s>, built by
	// Layout.SessionKey. The scripts slide its TTL and delete it with the
	// session (SessionPrefixes), whichever package registered it.
	ScopeSession Scope = iota + 1
	// ScopeUser: one key per user, <prefix>:<tag><u>, or one per user and
	// suffix, <prefix>:<tag><u>:<suffix>, where the family has a Suffix
	// (a search term, a metadata pair, a status); built by Layout.UserKey.
	ScopeUser
	// ScopeBucket: data across users, one shard per bucket (the only one
	// on standalone Redis): <prefix> and <prefix>:{b<N>}, or
	// <prefix>:<tag><suffix> where the family has a Suffix; built by
	// Layout.BucketKey.
	ScopeBucket
	// ScopeLock: a lock's keys, named by the caller (redis-py's names):
	// no prefix, explicit patterns.
	ScopeLock
	// ScopeChannel: a Pub/Sub channel, not a key: explicit patterns.
	ScopeChannel
)

// String is the scope as docs and panics name it.
func (s Scope) String() string {
	switch s {
	case ScopeSession:
		return "session"
	case ScopeUser:
		return "user"
	case ScopeBucket:
		return "bucket"
	case ScopeLock:
		return "lock"
	case ScopeChannel:
		return "channel"
	}
	return "Scope(" + strconv.Itoa(int(s)) + ")"
}

// Family is one kind of key (or channel) the sidecar writes. The package
// that owns it declares it once, with Register, in a package-level var of
// its keys.go; the builders, the globs, the reserved lock names, the
// scripts' session keys and docs/keyspace.md all follow from it.
type Family struct {
	Name string
	// Prefix begins every key of the family, before the first ':' of its
	// shape (agent_session_msgs). Required but for ScopeLock (lock keys are
	// the caller's names). Its first segment (up to a ':') is reserved:
	// no lock may take it.
	Prefix string
	// Code, for ScopeSession, is the family's short name in a session
	// record's list of the families the session has (field fams): 1 to 3
	// lowercase letters or digits, unique. The scripts slide and delete the
	// keys of those families only.
	Code  string
	Scope Scope
	// Suffix, for ScopeUser and ScopeBucket, describes what follows the
	// user (or the bucket's tag) after a ':' ("<term>", "<key>=<value>");
	// empty when a user (bucket) has one key of the family.
	Suffix string
	// Pattern and ClusterPattern are globs of the family's names on each
	// layout, usable with SCAN MATCH (redis-cli --scan --pattern) and
	// path.Match. Layout.Glob picks the layout's. Register derives them
	// from Prefix, Scope and Suffix; a family gives them itself only when
	// its names are irregular (lock names, channels, two families sharing
	// one prefix), and must then say why in a comment.
	Pattern, ClusterPattern string
	Kind                    Kind
	// SessionMembers marks a family of sorted sets whose members are
	// sessions: for a user family the user's session ids, which a session's
	// delete leaves (the core finds them in the session's record; for a
	// session without one, only Cognee wrote, in this list); for a bucket
	// family "<user>:<session>" of the bucket's users, which a user's
	// erasure sweeps for the members of the user's sessions that expired.
	SessionMembers bool
	// UserMembers, for a bucket family of sorted sets whose members name
	// the bucket's users in another shape than SessionMembers'
	// "<user>:<session>", is the SCAN MATCH glob of one user's members,
	// UserMember standing for the user id (ADK's app index, members
	// "<session> <user>": "* <user>"): a user's erasure sweeps those too.
	// User ids hold no glob character (ValidID).
	UserMembers string
	// Owner is the module whose routes write the family, or "shared": every
	// session write (modules sessions, ttl, usage) keeps it current through
	// the session scripts.
	Owner string
	// Cognee: Cognee's own name; Cognee reads and writes these keys too
	// (standalone Redis only).
	Cognee bool
	// Unlisted, for ScopeSession: a key of the family may exist though the
	// session's record does not list the family (a read makes it: the id
	// index of a list Cognee wrote). A session's due slide and its delete
	// look for these keys too, as for Cognee's.
	Unlisted bool
	TTL      TTLPolicy
	// Reason says, for Permanent, why the keys have no TTL and what bounds
	// them; for TemporaryException, the defect that leaves keys without one;
	// for RetentionTTL, how long the keys live.
	Reason      string
	Description string

	explicit bool // Pattern and ClusterPattern given, not derived
}

// bare: the family's names are the caller's own (a lock name): any key of
// id characters that no other family matches.
func (f Family) bare() bool { return f.Scope == ScopeLock && f.Pattern == "*" }

// stockOrder is the order of docs/keyspace.md within a scope, for the
// families the product ships (a family registered outside the repository
// follows, by name). It only orders: registering is what makes a family.
var stockOrder = func() map[string]int {
	names := []string{
		// session
		"entries", "traces", "context", "record", "qa index", "context index", "usage ids",
		"session state", "messages", "message tree", "message children", "message order",
		"staged messages", "staged message tree", "staged message children", "staged message order",
		"compactions", "search documents", "search entry documents",
		"session blocks", "frozen prompt", "tool calls", "session events", "event keys",
		"checkpoints", "checkpoint order",
		"adk session", "adk session state", "adk events",
		// user
		"user index", "user marker", "metadata index", "search sessions", "search marker", "user state",
		"user blocks", "user events", "user events watch", "adk user state", "adk sessions of a user",
		// bucket
		"global metadata index", "global index", "expiry", "usage totals", "usage by model",
		"adk app state", "adk sessions of an app",
		// lock
		"lock", "lock fence", "lock meta",
		// channel
		"events", "lock releases",
	}
	m := make(map[string]int, len(names))
	for i, n := range names {
		m[n] = i
	}
	return m
}()

// registry holds every registered family, and what is derived from them.
var registry struct {
	sync.RWMutex
	byName   map[string]Family
	sorted   []Family        // Families(), made on Register
	reserved map[string]bool // reserved first segments
}

// Register adds f to the keyspace and returns it with its patterns filled
// in. Call it from a package-level var of the owning package, so every
// family is registered at init, before the host starts:
//
//	var StateFamily = redisstore.Register(redisstore.Family{Name: "session state", ...})
//
// It panics on a missing or inconsistent field, a name already registered,
// or a prefix that overlaps another family's: the mistake shows at the
// first start (and in every test of the package).
func Register(f Family) Family {
	f = complete(f)
	registry.Lock()
	defer registry.Unlock()
	if registry.byName == nil {
		registry.byName = map[string]Family{}
	}
	if _, dup := registry.byName[f.Name]; dup {
		panic(fmt.Sprintf("redisstore.Register: key family %q registered twice", f.Name))
	}
	for _, g := range registry.byName {
		if f.Code != "" && g.Code == f.Code {
			panic(fmt.Sprintf("redisstore.Register: key family %q: code %q is family %q's", f.Name, f.Code, g.Name))
		}
	}
	for _, g := range registry.byName {
		if overlap(f, g) {
			panic(fmt.Sprintf("redisstore.Register: key family %q: prefix %q overlaps family %q's %q", f.Name, f.Prefix, g.Name, g.Prefix))
		}
	}
	registry.byName[f.Name] = f
	rebuild()
	return f
}

// unregister removes a family (tests only, through export_test.go).
func unregister(name string) {
	registry.Lock()
	defer registry.Unlock()
	delete(registry.byName, name)
	rebuild()
}

// rebuild remakes the sorted list and the reserved names; the caller holds
// the lock.
func rebuild() {
	out := make([]Family, 0, len(registry.byName))
	reserved := map[string]bool{}
	for _, f := range registry.byName {
		out = append(out, f)
		if f.Prefix != "" {
			reserved[family(f.Prefix)] = true
		}
	}
	slices.SortFunc(out, func(a, b Family) int {
		return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(order(a), order(b)), strings.Compare(a.Name, b.Name))
	})
	registry.sorted, registry.reserved = out, reserved
}

func order(f Family) int {
	if i, ok := stockOrder[f.Name]; ok {
		return i
	}
	return len(stockOrder)
}

// overlap reports whether the names of f and g could meet: the same
// prefix, or one's prefix followed by ':' beginning the other's. Families
// that share a prefix on purpose give their (disjoint) patterns
// themselves, both of them; lock families have no prefix.
func overlap(f, g Family) bool {
	if f.Prefix == "" || g.Prefix == "" || (f.explicit && g.explicit) {
		return false
	}
	return f.Prefix == g.Prefix || strings.HasPrefix(f.Prefix, g.Prefix+":") || strings.HasPrefix(g.Prefix, f.Prefix+":")
}

// complete checks f's fields and derives its patterns; it panics naming
// the first mistake.
func complete(f Family) Family {
	var err error
	for _, check := range []func(Family) error{checkDescribed, checkKind, checkTTL, checkPrefix, checkMembers} {
		if err = check(f); err != nil {
			break
		}
	}
	if err == nil {
		f, err = withPatterns(f)
	}
	if err != nil {
		panic(fmt.Sprintf("redisstore.Register: key family %q: %v", f.Name, err))
	}
	return f
}

// checkDescribed: a family has a name, an owner and a description.
func checkDescribed(f Family) error {
	if f.Name == "" {
		return errors.New("no name")
	}
	if f.Owner == "" || f.Description == "" {
		return fmt.Errorf("owner %q, description %q: both are required", f.Owner, f.Description)
	}
	return nil
}

// checkKind: a key family holds a Redis type, a channel family channels.
func checkKind(f Family) error {
	switch f.Kind {
	case KindString, KindList, KindHash, KindZSet, KindStream:
		if f.Scope == ScopeChannel {
			return fmt.Errorf("a channel family holds kind %q, want %q", f.Kind, KindChannel)
		}
	case KindChannel:
		if f.Scope != ScopeChannel {
			return fmt.Errorf("kind %q in scope %s", f.Kind, f.Scope)
		}
	default:
		return fmt.Errorf("kind %q", f.Kind)
	}
	return nil
}

// checkTTL: a TTL policy, with a reason exactly where it needs one; a
// session family has the session's TTL.
func checkTTL(f Family) error {
	switch f.TTL {
	case SessionTTL, LockTTL, UserTTL:
		if f.Reason != "" {
			return fmt.Errorf("policy %s with a reason %q (reasons are for keys without a TTL or with a retention)", f.TTL, f.Reason)
		}
	case Permanent, TemporaryException, RetentionTTL:
		if f.Reason == "" {
			return fmt.Errorf("policy %s needs a reason", f.TTL)
		}
	default:
		return errors.New("no TTL policy")
	}
	if f.Scope == ScopeSession && f.TTL != SessionTTL {
		return fmt.Errorf("a session family has the session's TTL, not %s", f.TTL)
	}
	if f.TTL == UserTTL && f.Scope != ScopeUser {
		return fmt.Errorf("the user TTL is for user families, not %s", f.Scope)
	}
	return nil
}

// UserMember stands for the user id in a Family's UserMembers.
const UserMember = "<user>"

// checkMembers: UserMembers only on a bucket family of sorted sets that
// is not SessionMembers, naming the user once.
func checkMembers(f Family) error {
	if f.UserMembers == "" {
		return nil
	}
	if f.Scope != ScopeBucket || f.Kind != KindZSet || f.SessionMembers {
		return fmt.Errorf("UserMembers %q on a %s %s family (SessionMembers %v): for bucket sorted sets of another member shape",
			f.UserMembers, f.Scope, f.Kind, f.SessionMembers)
	}
	if strings.Count(f.UserMembers, UserMember) != 1 || strings.ContainsAny(f.UserMembers, "\n") {
		return fmt.Errorf("UserMembers %q: a glob naming %s once, on one line", f.UserMembers, UserMember)
	}
	return nil
}

// checkPrefix: a plain prefix (none for a lock family), a suffix only on
// user and bucket families, a code on session families alone.
func checkPrefix(f Family) error {
	switch {
	case f.Scope == ScopeLock:
		if f.Prefix != "" {
			return errors.New("a lock family has no prefix (its keys are the caller's names)")
		}
	case f.Prefix == "":
		return errors.New("no prefix")
	case strings.ContainsAny(f.Prefix, "*?[]{}\\ ") || strings.HasSuffix(f.Prefix, ":"):
		return fmt.Errorf("prefix %q: no glob characters, braces, spaces or trailing ':'", f.Prefix)
	}
	if f.Scope == ScopeSession && !validCode(f.Code) {
		return fmt.Errorf("code %q: a session family has a code of 1 to 3 lowercase letters or digits", f.Code)
	}
	if f.Scope != ScopeSession && f.Code != "" {
		return fmt.Errorf("a code is for session families, not %s", f.Scope)
	}
	if f.Suffix != "" && f.Scope != ScopeUser && f.Scope != ScopeBucket {
		return fmt.Errorf("a suffix is for user and bucket families, not %s", f.Scope)
	}
	return nil
}

// withPatterns is f with its patterns: derived from its scope and prefix,
// or its own (explicit) ones checked.
func withPatterns(f Family) (Family, error) {
	f.explicit = f.Pattern != "" || f.ClusterPattern != ""
	if !f.explicit {
		switch f.Scope {
		case ScopeSession:
			f.Pattern, f.ClusterPattern = f.Prefix+":*:*", f.Prefix+":{b*}:*:*"
		case ScopeUser:
			f.Pattern, f.ClusterPattern = f.Prefix+":*", f.Prefix+":{b*}:*"
			if f.Suffix != "" {
				f.Pattern, f.ClusterPattern = f.Pattern+":*", f.ClusterPattern+":*"
			}
		case ScopeBucket:
			f.Pattern, f.ClusterPattern = f.Prefix, f.Prefix+":{b*}"
			if f.Suffix != "" {
				f.Pattern, f.ClusterPattern = f.Prefix+":*", f.Prefix+":{b*}:*"
			}
		default:
			return f, fmt.Errorf("scope %s: give Pattern and ClusterPattern", f.Scope)
		}
		return f, nil
	}
	if f.Scope == ScopeSession {
		return f, errors.New("a session family's names are <prefix>:<tag><u>:<s>, its patterns derived: give none")
	}
	for _, p := range []string{f.Pattern, f.ClusterPattern} {
		if _, err := path.Match(p, ""); p == "" || err != nil {
			return f, fmt.Errorf("pattern %q is not a glob (%v)", p, err)
		}
		if !strings.HasPrefix(p, f.Prefix) {
			return f, fmt.Errorf("pattern %q does not begin with its prefix %q", p, f.Prefix)
		}
	}
	return f, nil
}

func validCode(code string) bool {
	if len(code) < 1 || len(code) > 3 {
		return false
	}
	for _, r := range code {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// Families returns every registered key family and channel, in the order
// of docs/keyspace.md: by scope (session, user, bucket, lock, channel),
// then the stock order, then by name; the same whatever the order in which
// packages were initialised. A test keeps docs/keyspace.md's table equal to
// it, and the keyspace test (cmd/sidecar) drives every route and fails on
// a key in Redis that no family matches, or that lacks a TTL its family
// promises.
func Families() []Family {
	registry.RLock()
	defer registry.RUnlock()
	return slices.Clone(registry.sorted)
}

// SessionPrefixes returns the prefixes of the ScopeSession families,
// sorted: a session's own keys are <prefix>:<tag><u>:<s> for each of them.
// The scripts get them as data, so a session's TTL slide and delete cover
// every registered session family, a module's outside this repository
// among them.
func SessionPrefixes() []string {
	var out []string
	for _, f := range Families() {
		if f.Scope == ScopeSession {
			out = append(out, f.Prefix)
		}
	}
	slices.Sort(out)
	return out
}

// SessionKey is session (user, session)'s key of family f:
// <prefix>:<tag><u>:<s>. It panics when f is not a session family.
func (l Layout) SessionKey(f Family, user, session string) string {
	if f.Scope != ScopeSession || f.Prefix == "" {
		panic(fmt.Sprintf("redisstore: SessionKey of family %q (scope %s, prefix %q)", f.Name, f.Scope, f.Prefix))
	}
	return f.Prefix + ":" + l.tag(l.Bucket(user)) + user + ":" + session
}

// UserKey is user's key of family f: <prefix>:<tag><u>, or
// <prefix>:<tag><u>:<suffix> for a family with a Suffix (exactly one
// suffix then, none otherwise). It panics when f is not a user family or
// the suffix does not fit it.
func (l Layout) UserKey(f Family, user string, suffix ...string) string {
	if f.Scope != ScopeUser || f.Prefix == "" || len(suffix) != suffixes(f) {
		panic(fmt.Sprintf("redisstore: UserKey of family %q (scope %s, suffix %q) with %d suffixes", f.Name, f.Scope, f.Suffix, len(suffix)))
	}
	k := f.Prefix + ":" + l.tag(l.Bucket(user)) + user
	if len(suffix) == 1 {
		k += ":" + suffix[0]
	}
	return k
}

// BucketKey is shard bucket's key of family f: <prefix> on standalone and
// <prefix>:{b<N>} on Cluster, or <prefix>:<tag><suffix> for a family with a
// Suffix (exactly one suffix then, none otherwise). It panics when f is not
// a bucket family or the suffix does not fit it.
func (l Layout) BucketKey(f Family, bucket int, suffix ...string) string {
	if f.Scope != ScopeBucket || f.Prefix == "" || len(suffix) != suffixes(f) {
		panic(fmt.Sprintf("redisstore: BucketKey of family %q (scope %s, suffix %q) with %d suffixes", f.Name, f.Scope, f.Suffix, len(suffix)))
	}
	tag := l.tag(bucket)
	if len(suffix) == 1 {
		return f.Prefix + ":" + tag + suffix[0]
	}
	if tag == "" {
		return f.Prefix
	}
	return f.Prefix + ":" + tag[:len(tag)-1]
}

func suffixes(f Family) int {
	if f.Suffix != "" {
		return 1
	}
	return 0
}

// Glob is f's pattern on layout l.
func (l Layout) Glob(f Family) string {
	if l.Cluster {
		return f.ClusterPattern
	}
	return f.Pattern
}

// MatchAll returns every registered family whose pattern on layout l
// matches key (or channel name). A bare family (a lock name) matches only
// a key of id characters that no other family matches. More than one
// family is a fault of the layout.
func (l Layout) MatchAll(key string) []Family {
	fams := Families()
	var out []Family
	for _, f := range fams {
		if f.bare() {
			continue
		}
		if ok, _ := path.Match(l.Glob(f), key); ok {
			out = append(out, f)
		}
	}
	if len(out) > 0 || !ValidID(key) {
		return out
	}
	for _, f := range fams {
		if f.bare() {
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
