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

// The library first: a script's includes are resolved when it is
// registered (Go initialises package-level variables in declaration
// order, a file at a time).
var _ = func() bool { lua.LibraryFromFS(luaFiles, "registry"); return true }()

var (
	scriptCreate    = lua.FromFS(luaFiles, "registry_create")
	scriptUpdate    = lua.FromFS(luaFiles, "registry_update")
	scriptActive    = lua.FromFS(luaFiles, "registry_active")
	scriptActiveEnd = lua.FromFS(luaFiles, "registry_active_end")
	scriptState     = lua.FromFS(luaFiles, "registry_state")
	scriptUserState = lua.FromFS(luaFiles, "registry_user_state")
)
