package lua_test

import (
	"crypto/sha1"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

var update = flag.Bool("update", false, "rewrite testdata/scripts.sha1")

// Each script's SHA1 is pinned, so any edit to a script (or to a library
// it includes) shows in review: run `go test ./lua -update` and commit the
// new testdata/scripts.sha1 with the change. These are the stock scripts
// only: this test binary links no module, and a module outside this
// package pins the scripts it adds with New in its own tests, next to them
// (examples/hello does).
func TestScriptSHA1Pinned(t *testing.T) {
	var b strings.Builder
	for _, s := range lua.All() {
		sum := sha1.Sum([]byte(s.Source()))
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

// Every script opens with its contract: those of lua/ and those a module
// embeds next to its Go (../<module>/<name>.lua).
func TestScriptsDocumentKeysArgvReturns(t *testing.T) {
	for _, s := range lua.All() {
		file := s.Name + ".lua"
		if _, err := os.Stat(file); err != nil {
			found, _ := filepath.Glob(filepath.Join("..", "*", file))
			if len(found) != 1 {
				t.Fatalf("%s: no file %s in lua/ and %d in the modules' directories", s.Name, file, len(found))
			}
			file = found[0]
		}
		body, err := os.ReadFile(file)
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

// Redis and miniredis both accept every script. A second Load sends no
// script a node already holds; after SCRIPT FLUSH it sends them all again.
func TestScriptsLoad(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		c := srv.Client(t)
		held := func() int {
			t.Helper()
			shas := make([]string, 0, len(lua.All()))
			for _, s := range lua.All() {
				shas = append(shas, s.SHA1())
			}
			got, err := c.Do(t.Context(), c.B().ScriptExists().Sha1(shas...).Build()).AsIntSlice()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, v := range got {
				n += int(v)
			}
			return n
		}
		for range 2 {
			if err := lua.Load(t.Context(), c); err != nil {
				t.Fatal(err)
			}
			if got, want := held(), len(lua.All()); got != want {
				t.Fatalf("%d of %d scripts held after Load", got, want)
			}
		}
		if srv.Mini == nil {
			loads := func() string {
				info, _ := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
				for line := range strings.Lines(info) {
					if strings.HasPrefix(line, "cmdstat_script|load:") {
						calls, _, _ := strings.Cut(strings.TrimPrefix(line, "cmdstat_script|load:"), ",")
						return calls
					}
				}
				return ""
			}
			before := loads()
			if before == "" {
				t.Fatal("INFO commandstats shows no SCRIPT LOAD")
			}
			if err := lua.Load(t.Context(), c); err != nil {
				t.Fatal(err)
			}
			if after := loads(); after != before {
				t.Errorf("SCRIPT LOAD calls %s -> %s: a Load sent scripts the server held", before, after)
			}
		}
		if err := c.Do(t.Context(), c.B().ScriptFlush().Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if err := lua.Load(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if got, want := held(), len(lua.All()); got != want {
			t.Fatalf("%d of %d scripts held after SCRIPT FLUSH and Load", got, want)
		}
	})
}

// New refuses a name already taken (a stock script's), a name that is no
// metrics label, and an unknown library, at once and without registering
// anything; the registry still holds exactly the stock scripts.
func TestNewRefusesBadScripts(t *testing.T) {
	before := len(lua.All())
	for _, c := range []struct{ name, source, want string }{
		{"lock_acquire", "return 1", `lua: script "lock_acquire" registered twice`},
		{"Hello-World", "return 1", `lua: script name "Hello-World": want lowercase letters, digits and _`},
		{"", "return 1", `lua: script name "": want lowercase letters, digits and _`},
		{"nolib", "--- @include nosuchlib\nreturn 1", "lua: nolib includes nosuchlib: no such library"},
	} {
		if got := panicOf(func() { lua.New(c.name, c.source) }); got != c.want {
			t.Errorf("New(%q): got panic %q, want %q", c.name, got, c.want)
		}
	}
	if got := len(lua.All()); got != before {
		t.Fatalf("got %d scripts after refused News, want %d", got, before)
	}
}

func panicOf(f func()) (msg string) {
	defer func() { msg = fmt.Sprint(recover()) }()
	f()
	return "no panic"
}

// NewLibrary refuses a name no include line can name, a name already
// taken, and the name of a Lua keyword or of a global Redis's Lua has (a
// library is a local of its name ahead of every script in the Functions
// library: "string" would hide string.format from every stock script).
func TestNewLibraryRefusesBadNames(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"string", `lua: library name "string": want a lowercase letter, then letters, digits and _, and no Lua keyword or global`},
		{"redis", `lua: library name "redis": want a lowercase letter, then letters, digits and _, and no Lua keyword or global`},
		{"end", `lua: library name "end": want a lowercase letter, then letters, digits and _, and no Lua keyword or global`},
		{"1lib", `lua: library name "1lib": want a lowercase letter, then letters, digits and _, and no Lua keyword or global`},
		{"session", `lua: library "session" registered twice`},
	} {
		if got := panicOf(func() { lua.NewLibrary(c.name, "return {}") }); got != c.want {
			t.Errorf("NewLibrary(%q): got panic %q, want %q", c.name, got, c.want)
		}
	}
}
