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

// The library first: a script's includes are resolved when it is
// registered (Go initialises package-level variables in declaration
// order, a file at a time).
var _ = func() bool { lua.LibraryFromFS(luaFiles, "adk"); return true }()

var (
	scriptCreate = lua.FromFS(luaFiles, "adk_create")
	scriptAppend = lua.FromFS(luaFiles, "adk_append")
	scriptApp    = lua.FromFS(luaFiles, "adk_app")
	scriptRead   = lua.FromFS(luaFiles, "adk_read", lua.ReadOnly)
	scriptList   = lua.FromFS(luaFiles, "adk_list")
	scriptUnlist = lua.FromFS(luaFiles, "adk_unlist")
)
