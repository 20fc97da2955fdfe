package redisstore_test

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/adk"
	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/checkpoints"
	"github.com/agentsidecar/agentsidecar/events"
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/registry"

	// Every stock module, so Families() is the product's keyspace (each
	// module registers its own families at init).
	_ "github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
)

// layouts are both key layouts, named for subtests.
var layouts = []struct {
	name string
	l    redisstore.Layout
}{{"standalone", redisstore.Layout{}}, {"cluster", redisstore.Layout{Cluster: true}}}

// TestFamiliesWellFormed: Register checked each family's fields when its
// package was initialised; here, what follows from them: every family but
// a lock's has a prefix that its patterns begin with, and the globs
// derived from a scope are those of the scope's shape.
func TestFamiliesWellFormed(t *testing.T) {
	fams := redisstore.Families()
	if len(fams) < 38 {
		t.Fatalf("%d families registered, want the stock modules' 38 at least", len(fams))
	}
	for _, name := range redisstore.StockOrder() {
		if !slices.ContainsFunc(fams, func(f redisstore.Family) bool { return f.Name == name }) {
			t.Errorf("the stock order names %q, which no stock module registers", name)
		}
	}
	for _, f := range fams {
		if f.Scope == redisstore.ScopeLock {
			if f.Prefix != "" {
				t.Errorf("lock family %q: prefix %q", f.Name, f.Prefix)
			}
			continue
		}
		if f.Prefix == "" {
			t.Errorf("family %q: no prefix", f.Name)
		}
		for _, p := range []string{f.Pattern, f.ClusterPattern} {
			if !strings.HasPrefix(p, f.Prefix) {
				t.Errorf("family %q: pattern %q does not begin with its prefix %q", f.Name, p, f.Prefix)
			}
		}
		if f.Scope == redisstore.ScopeSession && (f.Pattern != f.Prefix+":*:*" || f.ClusterPattern != f.Prefix+":{b*}:*:*") {
			t.Errorf("session family %q: patterns %q, %q", f.Name, f.Pattern, f.ClusterPattern)
		}
		if !redisstore.Reserved(f.Prefix) {
			t.Errorf("family %q: prefix %q is not reserved", f.Name, f.Prefix)
		}
	}
}

// TestRegisterRefuses: a repeated name, a prefix overlapping another
// family's, a missing field or patterns a scope derives panic at Register,
// naming the family.
func TestRegisterRefuses(t *testing.T) {
	ok := redisstore.Family{
		Name: "test family", Prefix: "test_family_x", Code: "zz", Scope: redisstore.ScopeSession,
		Kind: redisstore.KindHash, Owner: "test", TTL: redisstore.SessionTTL, Description: "d",
	}
	for name, change := range map[string]func(f *redisstore.Family){
		"repeated name":            func(f *redisstore.Family) { f.Name = "entries" },
		"same prefix":              func(f *redisstore.Family) { f.Prefix = "agent_session_msgs" },
		"prefix inside another":    func(f *redisstore.Family) { f.Prefix = "agent_search_docs:x" },
		"prefix around another":    func(f *redisstore.Family) { f.Prefix = "sidecar" },
		"no prefix":                func(f *redisstore.Family) { f.Prefix = "" },
		"glob in prefix":           func(f *redisstore.Family) { f.Prefix = "test_*" },
		"no scope":                 func(f *redisstore.Family) { f.Scope = 0 },
		"no kind":                  func(f *redisstore.Family) { f.Kind = "" },
		"no owner":                 func(f *redisstore.Family) { f.Owner = "" },
		"no description":           func(f *redisstore.Family) { f.Description = "" },
		"no TTL policy":            func(f *redisstore.Family) { f.TTL = 0 },
		"session without its TTL":  func(f *redisstore.Family) { f.TTL, f.Reason = redisstore.RetentionTTL, "r" },
		"permanent without reason": func(f *redisstore.Family) { f.Scope, f.TTL = redisstore.ScopeUser, redisstore.Permanent },
		"session patterns given":   func(f *redisstore.Family) { f.Pattern, f.ClusterPattern = "test_family_x:*", "test_family_x:*" },
		"session without a code":   func(f *redisstore.Family) { f.Code = "" },
		"code taken":               func(f *redisstore.Family) { f.Code = "e" },
		"suffix on a session":      func(f *redisstore.Family) { f.Suffix = "<x>" },
		"channel without patterns": func(f *redisstore.Family) {
			f.Scope, f.Kind, f.TTL, f.Reason = redisstore.ScopeChannel, redisstore.KindChannel, redisstore.Permanent, "r"
		},
		"pattern not at the prefix": func(f *redisstore.Family) { f.Scope, f.Pattern, f.ClusterPattern = redisstore.ScopeUser, "x:*", "x:*" },
		"user members on a session": func(f *redisstore.Family) { f.Kind, f.UserMembers = redisstore.KindZSet, "* <user>" },
		"user members without the user": func(f *redisstore.Family) {
			f.Scope, f.Kind, f.TTL, f.Reason, f.Code, f.UserMembers = redisstore.ScopeBucket, redisstore.KindZSet, redisstore.RetentionTTL, "r", "", "* u"
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := ok
			change(&f)
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, "redisstore.Register") || !strings.Contains(msg, f.Name) {
					t.Errorf("Register: panic %v, want one naming the family", r)
				}
			}()
			redisstore.Register(f)
		})
	}
	if slices.ContainsFunc(redisstore.Families(), func(f redisstore.Family) bool { return f.Prefix == ok.Prefix }) {
		t.Error("a refused family was registered")
	}
}

// sessionBuilders are the named builders of every session family of the
// stock modules, by family name, for one layout.
func sessionBuilders(l redisstore.Layout, user, session string) map[string]string {
	k := l.Session(user, session)
	m := messages.SessionKeys(l, user, session)
	sm := messages.StagedKeys(l, user, session)
	return map[string]string{
		"staged messages": sm.Messages, "staged message tree": sm.Tree, "staged message children": sm.Children,
		"staged message order": sm.Order,
		"entries":              k.Entries, "traces": k.Traces, "context": k.Context, "record": k.Record,
		"qa index": k.Index, "context index": k.ContextIndex, "usage ids": k.Usage,
		"session state": l.SessionKey(registry.SessionStateFamily, user, session),
		"messages":      m.Messages, "message tree": m.Tree, "message children": m.Children,
		"message order": m.Order, "compactions": m.Compactions,
		"search documents": l.SearchDocs(user, session), "search entry documents": l.SearchEntryDocs(user, session),
		"session blocks":    l.SessionKey(blocks.SessionBlocksFamily, user, session),
		"frozen prompt":     l.SessionKey(blocks.PromptFamily, user, session),
		"tool calls":        l.SessionKey(blocks.ToolCallsFamily, user, session),
		"session events":    l.SessionEvents(user, session),
		"event keys":        l.SessionKey(events.EventKeysFamily, user, session),
		"checkpoints":       l.SessionKey(checkpoints.HashFamily, user, session),
		"checkpoint order":  l.SessionKey(checkpoints.OrderFamily, user, session),
		"adk session":       l.SessionKey(adk.SessionFamily, user, session),
		"adk session state": l.SessionKey(adk.StateFamily, user, session),
		"adk events":        l.SessionKey(adk.EventsFamily, user, session),
	}
}

// TestSessionFamilies: the named builder of each session family is
// Layout.SessionKey of the family, on both layouts, and
// SessionPrefixes lists exactly the session families' prefixes (what the
// scripts slide and delete with a session).
func TestSessionFamilies(t *testing.T) {
	var want []string
	for _, lay := range layouts {
		b := sessionBuilders(lay.l, "alice", "chat-1")
		n := 0
		for _, f := range redisstore.Families() {
			if f.Scope != redisstore.ScopeSession {
				if _, ok := b[f.Name]; ok {
					t.Errorf("%s: family %q has a session builder, but scope %s", lay.name, f.Name, f.Scope)
				}
				continue
			}
			n++
			if lay.name == "standalone" {
				want = append(want, f.Prefix)
			}
			got, ok := b[f.Name]
			if !ok {
				t.Errorf("%s: session family %q: no builder in this test", lay.name, f.Name)
			}
			if sk := lay.l.SessionKey(f, "alice", "chat-1"); got != sk {
				t.Errorf("%s: family %q: builder %q, SessionKey %q", lay.name, f.Name, got, sk)
			}
		}
		if n != len(b) {
			t.Errorf("%s: %d session families, %d builders", lay.name, n, len(b))
		}
	}
	slices.Sort(want)
	if got := redisstore.SessionPrefixes(); !slices.Equal(got, want) {
		t.Errorf("SessionPrefixes() = %q, want %q", got, want)
	}
}

// TestMatchBuilders: every name the key builders make belongs to exactly
// one family, the right one, on both layouts.
func TestMatchBuilders(t *testing.T) {
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			l := lay.l
			k := l.Session("alice", "chat-1")
			want := map[string]string{
				k.Expiry: "expiry", k.Totals: "usage totals",
				l.UserKey(blocks.UserBlocksFamily, "alice"):                       "user blocks",
				l.UserKey(registry.UserStateFamily, "alice"):                      "user state",
				l.UserMarker("alice"):                                             "user marker",
				l.UserEvents("alice"):                                             "user events",
				l.UserKey(events.UserWatchFamily, "alice"):                        "user events watch",
				l.MetaIndex("alice", "team", "a:b"):                               "metadata index",
				l.MetaGlobal(l.Bucket("alice"), "team", "a"):                      "global metadata index",
				l.SearchStats("alice"):                                            "search marker",
				l.SearchSessions("alice"):                                         "search sessions",
				redisstore.EventsChannel(l.SessionEvents("alice", "chat-1")):      "events",
				l.UserKey(adk.UserStateFamily, "alice", "weather"):                "adk user state",
				l.UserKey(adk.IndexFamily, "alice", "weather"):                    "adk sessions of a user",
				l.BucketKey(adk.AppStateFamily, l.Bucket("weather"), "weather"):   "adk app state",
				l.BucketKey(adk.AppIndexFamily, l.Bucket("alice"), "weather:asc"): "adk sessions of an app",
			}
			for fam, key := range sessionBuilders(l, "alice", "chat-1") {
				want[key] = fam
			}
			day := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
			for i := range redisstore.IndexStatuses {
				want[k.UserIndex[i]] = "user index"
				want[k.GlobalIndex[i]] = "global index"
			}
			for b := range l.Buckets() {
				g := l.Global(b)
				want[g.Expiry], want[g.Totals], want[g.ByModelDay(day)] = "expiry", "usage totals", "usage by model"
				for _, ix := range g.Index {
					want[ix] = "global index"
				}
			}
			for _, name := range []string{"graph_writes", "a", "myapp.job-7@host", strings.Repeat("x", 128)} {
				lk := locks.KeysOf(name)
				want[lk.Lock], want[lk.Fence], want[lk.Meta] = "lock", "lock fence", "lock meta"
			}
			want[locks.ReleaseChannel] = "lock releases"
			fams := map[string]bool{}
			for key, fam := range want {
				fams[fam] = true
				if got := names(l.MatchAll(key)); !slices.Equal(got, []string{fam}) {
					t.Errorf("%q matches %v, want [%s]", key, got, fam)
				}
			}
			for _, f := range redisstore.Families() {
				if !fams[f.Name] {
					t.Errorf("family %q: no builder's key in this test", f.Name)
				}
			}
		})
	}
}

// TestMatchRejectsStrays: names the sidecar never writes match no family
// (so the keyspace test reports them), on both layouts.
func TestMatchRejectsStrays(t *testing.T) {
	strays := []string{
		"", "myapp:cache:1", "agent_sessions:alice", "agent_sessions_global:other",
		"agent_sessions_global:expiry:x/y", "{graph_writes}:other", "sidecar:locks:other",
		"two words", ".", "..", strings.Repeat("x", 129), "a/b", "{x}",
	}
	for _, lay := range layouts {
		for _, key := range strays {
			if f, ok := lay.l.Match(key); ok {
				t.Errorf("%s: %q matches family %q, want none", lay.name, key, f.Name)
			}
		}
	}
	// Each layout's session keys are not the other's: a cluster tag is
	// required on Cluster.
	if f, ok := (redisstore.Layout{Cluster: true}).Match("agent_session_record:alice:chat-1"); ok {
		t.Errorf("cluster: an untagged record matches %q", f.Name)
	}
}

func names(fs []redisstore.Family) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// docRow is the line of docs/keyspace.md's table for f.
func docRow(f redisstore.Family) string {
	ttl := map[redisstore.TTLPolicy]string{
		redisstore.SessionTTL:         "the session's TTL",
		redisstore.LockTTL:            "the lock's TTL",
		redisstore.Permanent:          "none: " + f.Reason,
		redisstore.TemporaryException: "none yet (known defect): " + f.Reason,
		redisstore.RetentionTTL:       "retention: " + f.Reason,
		redisstore.UserTTL:            "the user's sessions': at least the TTL of each of them, from its last slide (none while one has none)",
	}[f.TTL]
	name := f.Name
	if f.Code != "" {
		name += " (`" + f.Code + "`)"
	}
	owner := f.Owner
	if f.Cognee {
		owner += ", Cognee"
	}
	return "| " + strings.Join([]string{name, "`" + f.Pattern + "`", "`" + f.ClusterPattern + "`",
		string(f.Kind), ttl, owner, f.Description}, " | ") + " |"
}

// TestMarkerFieldsDoc: docs/keyspace.md names every field of the user's
// marker a module registers, with its description.
func TestMarkerFieldsDoc(t *testing.T) {
	b, err := os.ReadFile("../docs/keyspace.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range redisstore.MarkerFields() {
		name := "`" + f.Name + "`"
		if f.PerSession {
			name = "`" + f.Name + ":<session_id>`"
		}
		if line := "| " + name + " | " + f.Owner + " | " + f.Description + " |"; !strings.Contains(string(b), line) {
			t.Errorf("docs/keyspace.md lacks the marker field's row\n%s", line)
		}
	}
}

// update rewrites docs/keyspace.md's table from Families():
// go test ./redisstore -run KeyspaceDoc -update, then review the diff.
var update = flag.Bool("update", false, "rewrite docs/keyspace.md's table from redisstore.Families()")

// TestKeyspaceDoc: the table of docs/keyspace.md is Families() (every
// family the stock modules register), row for row, so the operators' page
// cannot drift from the code.
func TestKeyspaceDoc(t *testing.T) {
	const file = "../docs/keyspace.md"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got, before, after []string // the table's rows, the lines around them
	in, done := false, false
	for line := range strings.Lines(string(b)) {
		row := strings.TrimRight(line, "\n")
		switch {
		case !done && strings.HasPrefix(row, "| family |"):
			in = true
			before = append(before, line)
		case in && strings.HasPrefix(row, "|---"):
			before = append(before, line)
		case in && strings.HasPrefix(row, "|"):
			got = append(got, row)
		case in:
			in, done = false, true
			after = append(after, line)
		case done:
			after = append(after, line)
		default:
			before = append(before, line)
		}
	}
	var want []string
	for _, f := range redisstore.Families() {
		want = append(want, docRow(f))
	}
	if slices.Equal(got, want) {
		return
	}
	if *update {
		text := strings.Join(before, "") + strings.Join(want, "\n") + "\n" + strings.Join(after, "")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: table rewritten (%d rows)", file, len(want))
		return
	}
	t.Errorf("docs/keyspace.md's table differs from redisstore.Families() (-update rewrites it); the table should read:\n%s", strings.Join(want, "\n"))
}

// TestFamiliesOrder: Families() does not depend on the order in which
// packages registered their families, and a family registered from outside
// the stock modules joins its scope's rows (after the stock ones), the
// session prefixes and the reserved names, and leaves with Unregister.
func TestFamiliesOrder(t *testing.T) {
	before := redisstore.Families()
	for i := len(before) - 1; i >= 0; i-- {
		redisstore.Unregister(before[i].Name)
	}
	for i := len(before) - 1; i >= 0; i-- {
		redisstore.Register(redisstore.Declared(before[i]))
	}
	if got := redisstore.Families(); !slices.EqualFunc(got, before, func(a, b redisstore.Family) bool { return a == b }) {
		t.Fatalf("registered in reverse: %v, want %v", names(got), names(before))
	}

	out := redisstore.Register(redisstore.Family{
		Name: "a module's own", Prefix: "test_outside", Code: "zo", Scope: redisstore.ScopeSession,
		Kind: redisstore.KindString, Owner: "test", TTL: redisstore.SessionTTL, Description: "d",
	})
	defer redisstore.Unregister(out.Name)
	fams := redisstore.Families()
	i := slices.IndexFunc(fams, func(f redisstore.Family) bool { return f.Name == out.Name })
	if i < 1 || fams[i-1].Scope != redisstore.ScopeSession || fams[i+1].Scope != redisstore.ScopeUser {
		t.Errorf("the outside family is row %d of %v, want the last session row", i, names(fams))
	}
	if !slices.Contains(redisstore.SessionPrefixes(), "test_outside") || !redisstore.Reserved("test_outside") {
		t.Errorf("SessionPrefixes() = %q, Reserved: %v; want the outside family's prefix in both", redisstore.SessionPrefixes(), redisstore.Reserved("test_outside"))
	}
	l := redisstore.Layout{Cluster: true}
	if f, ok := l.Match(l.SessionKey(out, "alice", "s1")); !ok || f.Name != out.Name {
		t.Errorf("its key matches %q (%v)", f.Name, ok)
	}
	redisstore.Unregister(out.Name)
	if slices.Contains(redisstore.SessionPrefixes(), "test_outside") || redisstore.Reserved("test_outside") {
		t.Error("unregistered, the family is still listed")
	}
}
