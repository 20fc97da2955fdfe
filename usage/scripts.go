package usage

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// The usage module's Lua: usage and cost counted into the session and the totals, and the end of a session.
//
// Each .lua file of the package is one script (its header says its KEYS,
// ARGV and answers) or a library its scripts include by name.
//
//go:embed *.lua
var luaFiles embed.FS

var luaScripts = lua.Package[struct {
	Usage, End *lua.Script
}](luaFiles, "session")
