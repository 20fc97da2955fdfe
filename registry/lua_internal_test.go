package registry

import (
	"io/fs"
	"strings"
	"testing"
)

// maxLuaLines bounds every Lua file of the module, as lua/'s own
// (lua.MaxLuaLines in its tests): a library that grows past it is split.
const maxLuaLines = 400

// TestLuaFilesSmall: no script or library of the module exceeds
// maxLuaLines.
func TestLuaFilesSmall(t *testing.T) {
	names, err := fs.Glob(luaFiles, "*.lua")
	if err != nil || len(names) == 0 {
		t.Fatalf("embedded Lua files: %v %v", names, err)
	}
	for _, name := range names {
		body, err := fs.ReadFile(luaFiles, name)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(body), "\n"); n > maxLuaLines {
			t.Errorf("registry/%s has %d lines; split it into libraries of at most %d", name, n, maxLuaLines)
		}
	}
}
