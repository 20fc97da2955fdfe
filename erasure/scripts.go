package erasure

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// scriptErase is one bounded step of an erasure (user_erase.lua): a
// session script over the record of the user's session "-", which it
// never writes (lua/lib/session.lua).
//
//go:embed *.lua
var luaFiles embed.FS

var luaScripts = lua.Package[struct {
	Erase *lua.Script
}](luaFiles, "user")
