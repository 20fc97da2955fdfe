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

var luaScripts = lua.Package[struct {
	Put, Writes *lua.Script
	Read, List  *lua.Script `lua:"readonly"`
}](luaFiles, "checkpoints", "checkpoints")
