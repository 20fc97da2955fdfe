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
var files embed.FS

var (
	scriptCustom = lua.FromFS(files, "events_custom")
	scriptAbort  = lua.FromFS(files, "events_abort")
	scriptWatch  = lua.FromFS(files, "events_watch")
)
