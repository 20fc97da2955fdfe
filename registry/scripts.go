package registry

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// The module's scripts (registry_*.lua, one per write) and their library
// (registry.lua), embedded and registered with the lua package: session
// scripts on the core's per-call contract (lua/lib/session.lua).
//
//go:embed *.lua
var luaFiles embed.FS

var luaScripts = lua.Package[struct {
	Create, Update, Active, ActiveEnd, State, UserState *lua.Script
}](luaFiles, "registry", "registry")
