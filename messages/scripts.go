package messages

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// The messages module's Lua: the tree of a session's messages, its writes and reads.
//
// Each .lua file of the package is one script (its header says its KEYS,
// ARGV and answers) or a library its scripts include by name.
//
//go:embed *.lua
var luaFiles embed.FS

var (
	// the libraries first: a script includes them when it is registered
	_ = func() bool {
		lua.LibraryFromFS(luaFiles, "msgtree")
		lua.LibraryFromFS(luaFiles, "compactions")
		lua.LibraryFromFS(luaFiles, "messages")
		return true
	}()
	messagesAppend      = lua.FromFS(luaFiles, "messages_append")
	messagesRead        = lua.FromFS(luaFiles, "messages_read", lua.ReadOnly)
	messagesPut         = lua.FromFS(luaFiles, "messages_put")
	messagesDelete      = lua.FromFS(luaFiles, "messages_delete")
	messagesPop         = lua.FromFS(luaFiles, "messages_pop")
	messagesClear       = lua.FromFS(luaFiles, "messages_clear")
	messagesFork        = lua.FromFS(luaFiles, "messages_fork")
	messagesSplit       = lua.FromFS(luaFiles, "messages_split")
	messagesIndex       = lua.FromFS(luaFiles, "messages_index")
	messagesTransaction = lua.FromFS(luaFiles, "messages_transaction")
	messagesCompact     = lua.FromFS(luaFiles, "messages_compact")
)
