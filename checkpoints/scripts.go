package checkpoints

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// The module's scripts (checkpoints_*.lua) and their library
// (checkpoints.lua), embedded and registered with the lua package:
// session scripts on the core's per-call contract (lua/lib/session.lua).
//
//go:embed *.lua
var luaFiles embed.FS

// The library first: a script's includes are resolved when it is
// registered (Go initialises package-level variables in declaration
// order, a file at a time).
var _ = func() bool { lua.LibraryFromFS(luaFiles, "checkpoints"); return true }()

var (
	scriptPut    = lua.FromFS(luaFiles, "checkpoints_put")
	scriptWrites = lua.FromFS(luaFiles, "checkpoints_writes")
	scriptRead   = lua.FromFS(luaFiles, "checkpoints_read", lua.ReadOnly)
	scriptList   = lua.FromFS(luaFiles, "checkpoints_list", lua.ReadOnly)
)
