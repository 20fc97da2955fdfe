package lua

// ADK scripts (adk module): session scripts over the same KEYS and first
// ARGVs as session_*.lua (lib/session.lua), on lib/adk.lua.
var (
	AdkCreate = load("adk_create")
	AdkAppend = load("adk_append")
	AdkRead   = load("adk_read", ReadOnly)
	AdkList   = load("adk_list")
	AdkUnlist = load("adk_unlist")
	// AdkApp is not a session script: KEYS[1] is an app's state (Cluster).
	AdkApp = load("adk_app")
)
