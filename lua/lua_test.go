package lua_test

import (
	"crypto/sha1"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

var update = flag.Bool("update", false, "rewrite testdata/scripts.sha1")

// Each script's SHA1 is pinned, so any edit to a script (or to the prelude
// it includes) shows in review: run `go test ./lua -update` and commit the
// new testdata/scripts.sha1 with the change.
func TestScriptSHA1Pinned(t *testing.T) {
	var b strings.Builder
	for _, s := range lua.All() {
		sum := sha1.Sum([]byte(s.Source))
		fmt.Fprintf(&b, "%s %s\n", hex.EncodeToString(sum[:]), s.Name)
	}
	if *update {
		if err := os.WriteFile("testdata/scripts.sha1", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/scripts.sha1")
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Fatalf("script SHA1s changed; review the script change and run go test ./lua -update\n got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// Every script opens with its contract.
func TestScriptsDocumentKeysArgvReturns(t *testing.T) {
	for _, s := range lua.All() {
		body, err := os.ReadFile(s.Name + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		head := string(body)
		if i := strings.Index(head, "\n\n"); i > 0 {
			head = head[:i]
		}
		for _, want := range []string{"KEYS", "ARGV", "returns"} {
			if !strings.Contains(head, want) {
				t.Errorf("%s.lua: header lacks %q", s.Name, want)
			}
		}
	}
}

// Redis and miniredis both accept every script.
func TestScriptsLoad(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		if err := lua.Load(t.Context(), srv.Client(t)); err != nil {
			t.Fatal(err)
		}
	})
}
