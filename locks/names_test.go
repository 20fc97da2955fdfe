package locks_test

import (
	"os"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// TestReservedNamesAreRefused: a lock name that is one of the sidecar's own
// key names (the lock key is the bare name) is 400 invalid_id on every
// route, and Redis is not touched: the global usage totals stay a hash.
func TestReservedNamesAreRefused(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, s *redisstoretest.Server) {
		h := sidecartest.Start(t, s, nil, locks.Factory)
		rc := s.Client(t)
		totals := s.Layout().Global(0).Totals
		if err := rc.Do(t.Context(), rc.B().Hset().Key(totals).FieldValue().FieldValue("calls", "3").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		tok := tokenBody(strings.Repeat("a", 32))
		for _, name := range redisstore.ReservedNames() {
			for _, c := range []struct{ method, path, body string }{
				{"POST", "/v1/locks/" + name, `{"ttl_ms":60000}`},
				{"POST", "/v1/locks/" + name, ``},
				{"POST", "/v1/locks/" + name + "/refresh", tok},
				{"DELETE", "/v1/locks/" + name, tok},
				{"GET", "/v1/locks/" + name, ``},
			} {
				r := do(t, t.Context(), c.method, h.API+c.path, c.body)
				if r.status != 400 || r.code() != "invalid_id" || !strings.Contains(r.body, "reserved") {
					t.Fatalf("%s %s: got %d %s, want 400 invalid_id (reserved)", c.method, c.path, r.status, r.body)
				}
			}
		}
		if typ, err := rc.Do(t.Context(), rc.B().Type().Key(totals).Build()).ToString(); err != nil || typ != "hash" {
			t.Fatalf("%s is %q (%v) after the refused calls, want the hash", totals, typ, err)
		}
		if n := s.DBSize(t); n != 1 {
			t.Fatalf("Redis holds %d keys after refused calls, want 1 (the totals)", n)
		}
		// Names that only look alike are ordinary locks.
		for _, name := range []string{"agent_usage_totals_backup", "sidecar-jobs", "agent_sessions2"} {
			g := acquire(t, h.API, name, `{}`)
			release(t, h.API, name, g.Token)
		}
	})
}

// TestReservedNamesAreDocumented: docs/keyspace.md (generated from the
// key layout, so a new key family shows up there) names every reserved
// name, and docs/locks.md and the lock name parameter of openapi.json send
// the reader there.
func TestReservedNamesAreDocumented(t *testing.T) {
	read := func(file string) string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	keyspace := read("../docs/keyspace.md")
	for _, name := range redisstore.ReservedNames() {
		if !strings.Contains(keyspace, "`"+name+":") && !strings.Contains(keyspace, "`"+name+"`") {
			t.Errorf("docs/keyspace.md does not name the reserved lock name %s", name)
		}
	}
	for _, file := range []string{"../docs/locks.md", "../openapi/openapi.json"} {
		if !strings.Contains(read(file), "keyspace.md") {
			t.Errorf("%s does not send the reader to keyspace.md for the reserved names", file)
		}
	}
}
