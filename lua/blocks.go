package lua

// Context-block scripts (blocks module): session scripts over the same KEYS
// and first ARGVs as session_*.lua, with lib/blocks.lua.
var (
	BlocksPut    = load("blocks_put")
	BlocksSet    = load("blocks_set")
	BlocksDelete = load("blocks_delete")
	BlocksRead   = load("blocks_read", ReadOnly)
	BlocksFreeze = load("blocks_freeze")
)
