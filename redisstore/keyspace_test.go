package redisstore_test

import (
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// layouts are both key layouts, named for subtests.
var layouts = []struct {
	name string
	l    redisstore.Layout
}{{"standalone", redisstore.Layout{}}, {"cluster", redisstore.Layout{Cluster: true}}}

// TestFamiliesWellFormed: names unique, patterns valid globs, a reason
// exactly where a key may lack a TTL, every field filled.
func TestFamiliesWellFormed(t *testing.T) {
	seen := map[string]bool{}
	kinds := []redisstore.Kind{redisstore.KindString, redisstore.KindList, redisstore.KindHash,
		redisstore.KindZSet, redisstore.KindStream, redisstore.KindChannel}
	for _, f := range redisstore.Families {
		if f.Name == "" || seen[f.Name] {
			t.Errorf("family %q: empty or repeated name", f.Name)
		}
		seen[f.Name] = true
		for _, p := range []string{f.Pattern, f.ClusterPattern} {
			if _, err := path.Match(p, ""); p == "" || err != nil {
				t.Errorf("family %q: pattern %q is not a glob (%v)", f.Name, p, err)
			}
		}
		if !slices.Contains(kinds, f.Kind) {
			t.Errorf("family %q: kind %q", f.Name, f.Kind)
		}
		if f.Owner == "" || f.Description == "" {
			t.Errorf("family %q: owner %q, description %q: both are required", f.Name, f.Owner, f.Description)
		}
		switch f.TTL {
		case redisstore.SessionTTL, redisstore.LockTTL:
			if f.Reason != "" {
				t.Errorf("family %q: policy %s with a reason %q (reasons are for keys without a TTL)", f.Name, f.TTL, f.Reason)
			}
		case redisstore.Permanent, redisstore.TemporaryException, redisstore.RetentionTTL:
			if f.Reason == "" {
				t.Errorf("family %q: policy %s needs a reason", f.Name, f.TTL)
			}
		default:
			t.Errorf("family %q: no TTL policy", f.Name)
		}
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
				k.Entries: "entries", k.Traces: "traces", k.Context: "context",
				k.Record: "record", k.Index: "qa index", k.Usage: "usage ids",
				k.Expiry: "expiry", k.Totals: "usage totals",
				l.SessionBlocks("alice", "chat-1"): "session blocks", l.SessionPrompt("alice", "chat-1"): "frozen prompt",
				l.SessionToolCalls("alice", "chat-1"): "tool calls", l.UserBlocks("alice"): "user blocks",
			}
			m := l.Messages("alice", "chat-1")
			want[m.Messages], want[m.Tree], want[m.Children] = "messages", "message tree", "message children"
			want[m.Order], want[m.Keys], want[m.Compactions] = "message order", "message keys", "compactions"
			want[l.SearchPostings("alice", "deploy")], want[l.SearchDocs("alice", "chat-1")] = "search postings", "search documents"
			want[l.SearchStats("alice")] = "search statistics"
			want[l.SearchEntryDocs("alice", "chat-1")] = "search entry documents"
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
				lk := redisstore.Lock(name)
				want[lk.Lock], want[lk.Fence], want[lk.Meta] = "lock", "lock fence", "lock meta"
			}
			want[redisstore.LockReleaseChannel] = "lock releases"
			for key, fam := range want {
				if got := names(l.MatchAll(key)); !slices.Equal(got, []string{fam}) {
					t.Errorf("%q matches %v, want [%s]", key, got, fam)
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
	}[f.TTL]
	owner := f.Owner
	if f.Cognee {
		owner += ", Cognee"
	}
	return "| " + strings.Join([]string{f.Name, "`" + f.Pattern + "`", "`" + f.ClusterPattern + "`",
		string(f.Kind), ttl, owner, f.Description}, " | ") + " |"
}

// TestKeyspaceDoc: the table of docs/keyspace.md is Families, row for row,
// so the operators' page cannot drift from the code.
func TestKeyspaceDoc(t *testing.T) {
	b, err := os.ReadFile("../docs/keyspace.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	in := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "| family |"):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			got = append(got, line)
		case in:
			in = false
		}
	}
	var want []string
	for _, f := range redisstore.Families {
		want = append(want, docRow(f))
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/keyspace.md's table differs from redisstore.Families; the table should read:\n%s", strings.Join(want, "\n"))
	}
}
