package adk

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// The module's scripts (adk_*.lua) and their library (adk.lua), embedded
// and registered with the lua package: session scripts on the core's
// per-call contract (lua/lib/session.lua), but adk_app.lua, whose KEYS[1]
// is an app's state (Redis Cluster).
//
//go:embed *.lua
var luaFiles embed.FS

var luaScripts = lua.Package[struct {
	Create, Append, App, List, Unlist *lua.Script
	Read                              *lua.Script `lua:"readonly"`
}](luaFiles, "adk", "adk")
