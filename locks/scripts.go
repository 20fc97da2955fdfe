package locks

import (
	"embed"

	"github.com/agentsidecar/agentsidecar/lua"
)

// The module's scripts (docs/locks.md), each over a lock's own keys (not
// session scripts): a lock named n is the key n itself holding its
// holder's token, exactly as redis-py's Lock stores it; its companions
// {n}:fence and {n}:meta share n's Redis Cluster slot.
//
//go:embed *.lua
var luaFiles embed.FS

var luaScripts = lua.Package[struct {
	Acquire, Release, Refresh *lua.Script
	Inspect                   *lua.Script `lua:"readonly"`
}](luaFiles, "lock", "lockholder")

// AcquireScript and ReleaseScript are the scripts of POST and DELETE
// /v1/locks/{name} (cmd/sidecar-bench runs them directly).
var AcquireScript, ReleaseScript = luaScripts.Acquire, luaScripts.Release
