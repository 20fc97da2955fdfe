package search

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// The search package's Lua: the relevance index every indexing write includes, and the user's on-demand marker.
//
// Each .lua file of the package is one script (its header says its KEYS,
// ARGV and answers) or a library its scripts include by name.
//
//go:embed *.lua
var luaFiles embed.FS

var luaScripts = lua.Package[struct {
	Mark *lua.Script
}](luaFiles, "search", "search")
