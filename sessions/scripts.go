package sessions

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// The sessions module's Lua: Cognee's lists (entries, traces, context), their id indexes and their search documents.
//
// Each .lua file of the package is one script (its header says its KEYS,
// ARGV and answers) or a library its scripts include by name.
//
//go:embed *.lua
var luaFiles embed.FS

var luaScripts = lua.Package[struct {
	Append, EntryGet, EntryUpdate, EntryDelete, TraceAppend, ContextAppend, ContextUpdate, ContextDelete, IndexBuild, SearchCatchup, SearchEntry *lua.Script
	Read, SearchPending                                                                                                                          *lua.Script `lua:"readonly"`
}](luaFiles, "session")
