package lua

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// MinHeadroom is how many more top-level locals every script must have
// room for. Lua 5.1 (Redis's) compiles a function with at most 200 active
// locals ("main function has more than 200 local variables"); gopher-lua
// (miniredis) has a register limit of its own.
const MinHeadroom = 100

// MaxLuaLines bounds every Lua file: a library that grows past it is split.
const MaxLuaLines = 400

// TestLuaFilesSmall: no script or library of lua/, or of a module,
// exceeds MaxLuaLines.
func TestLuaFilesSmall(t *testing.T) {
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".lua" {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		if n := strings.Count(string(body), "\n"); n > MaxLuaLines {
			t.Errorf("lua/%s has %d lines; split it into libraries of at most %d", p, n, MaxLuaLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// and the scripts and libraries the modules embed next to their Go
	// (FromFS, LibraryFromFS), registered by the modules this test links
	stock := func(p string) bool { _, err := fs.Stat(files, p); return err == nil }
	for _, s := range All() {
		if n := strings.Count(s.body, "\n"); n > MaxLuaLines && !stock(s.Name+".lua") {
			t.Errorf("script %s has %d lines; split it into libraries of at most %d", s.Name, n, MaxLuaLines)
		}
	}
	libs.Lock()
	names := make([]string, 0, len(libs.src))
	for name := range libs.src {
		names = append(names, name)
	}
	libs.Unlock()
	for _, name := range names {
		text, _ := libText(name)
		if n := strings.Count(text, "\n"); n > MaxLuaLines && !stock("lib/"+name+".lua") {
			t.Errorf("library %s has %d lines; split it into libraries of at most %d", name, n, MaxLuaLines)
		}
	}
}

// TestScriptsHeadroom measures, on a real redis-server (and miniredis),
// how many top-level locals each script as EVAL runs it could still take:
// extra locals are declared between its libraries and its own text, where
// every library's local and every top-level local of the script is live,
// and the most the server compiles is found by bisection. Each script must
// take at least MinHeadroom more. The Functions library holds the same
// libraries at its top level and each script's text in a function of its
// own, so its headroom is at least a script's.
func TestScriptsHeadroom(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		c := srv.Client(t)
		for _, s := range All() {
			src := s.Source()
			at := len(src) - len(s.body)
			compiles := func(extra int) bool {
				var b strings.Builder
				b.WriteString(src[:at])
				for i := range extra {
					fmt.Fprintf(&b, "local headroom_%d\n", i)
				}
				b.WriteString(src[at:])
				err := c.Do(t.Context(), c.B().ScriptLoad().Script(b.String()).Build()).Error()
				if err != nil && !isLocalLimit(err) {
					t.Fatalf("%s with %d extra locals: %v", s.Name, extra, err)
				}
				return err == nil
			}
			if !compiles(0) {
				t.Fatalf("%s does not compile", s.Name)
			}
			lo, hi := 0, 256 // compiles(lo); past hi no Lua compiles
			for lo+1 < hi {
				mid := (lo + hi) / 2
				if compiles(mid) {
					lo = mid
				} else {
					hi = mid
				}
			}
			if lo < MinHeadroom {
				t.Errorf("%s: room for %d more top-level locals, want at least %d", s.Name, lo, MinHeadroom)
			}
		}
	})
}

// isLocalLimit reports whether err is a compiler's refusal of too many
// locals or registers (Redis's Lua 5.1, gopher-lua).
func isLocalLimit(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "local variables") || strings.Contains(msg, "register overflow") ||
		strings.Contains(msg, "registers")
}
