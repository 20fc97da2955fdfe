package blocks

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// The module's scripts (blocks_*.lua, one per write, and the read) and
// their library (blocks.lua), embedded and registered with the lua
// package: session scripts on the core's per-call contract
// (lua/lib/session.lua).
//
//go:embed *.lua
var luaFiles embed.FS

// The library first: a script's includes are resolved when it is
// registered (Go initialises package-level variables in declaration
// order, a file at a time).
var _ = func() bool { lua.LibraryFromFS(luaFiles, "blocks"); return true }()

var (
	scriptPut    = lua.FromFS(luaFiles, "blocks_put")
	scriptSet    = lua.FromFS(luaFiles, "blocks_set")
	scriptDelete = lua.FromFS(luaFiles, "blocks_delete")
	scriptRead   = lua.FromFS(luaFiles, "blocks_read", lua.ReadOnly)
	scriptFreeze = lua.FromFS(luaFiles, "blocks_freeze")
)
