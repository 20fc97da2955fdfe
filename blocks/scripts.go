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

var luaScripts = lua.Package[struct {
	Put, Set, Delete, Freeze *lua.Script
	Read                     *lua.Script `lua:"readonly"`
}](luaFiles, "blocks", "blocks")
