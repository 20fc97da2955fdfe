package events

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// The module's scripts: events_custom and events_abort are session writes
// (KEYS[1] the record, ARGV[1] the core's settings: lua/lib/session.lua);
// events_watch marks a stream watched (its own KEYS and ARGV).
//
//go:embed *.lua
var luaFiles embed.FS

var luaScripts = lua.Package[struct {
	Custom, Abort, Watch *lua.Script
}](luaFiles, "events")
