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

var (
	sessionAppend        = lua.FromFS(luaFiles, "session_append")
	sessionEntryGet      = lua.FromFS(luaFiles, "session_entry_get")
	sessionEntryUpdate   = lua.FromFS(luaFiles, "session_entry_update")
	sessionEntryDelete   = lua.FromFS(luaFiles, "session_entry_delete")
	sessionTraceAppend   = lua.FromFS(luaFiles, "session_trace_append")
	sessionContextAppend = lua.FromFS(luaFiles, "session_context_append")
	sessionContextUpdate = lua.FromFS(luaFiles, "session_context_update")
	sessionContextDelete = lua.FromFS(luaFiles, "session_context_delete")
	sessionRead          = lua.FromFS(luaFiles, "session_read", lua.ReadOnly)
	sessionIndexBuild    = lua.FromFS(luaFiles, "session_index_build")
	sessionSearchPending = lua.FromFS(luaFiles, "session_search_pending", lua.ReadOnly)
	sessionSearchCatchup = lua.FromFS(luaFiles, "session_search_catchup")
	sessionSearchEntry   = lua.FromFS(luaFiles, "session_search_entry")
)
