package lua

// LangGraph checkpoint scripts (checkpoints module): session scripts over
// the same KEYS and first ARGVs as session_*.lua, with lib/checkpoints.lua.
var (
	CheckpointsPut    = load("checkpoints_put")
	CheckpointsWrites = load("checkpoints_writes")
	CheckpointsRead   = load("checkpoints_read", ReadOnly)
	CheckpointsList   = load("checkpoints_list", ReadOnly)
)
