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

var luaScripts = lua.Package[struct {
	Append, Put, Delete, Pop, Clear, Fork, Split, Index, Transaction, Compact *lua.Script
	StageOpen, StagePut, StageCommit, StageDrop                               *lua.Script
	Read                                                                      *lua.Script `lua:"readonly"`
}](luaFiles, "messages", "msgstage", "msgtree", "compactions", "messages")
