package lua

// Registry scripts (registry module): session scripts over the same KEYS
// and first ARGVs as session_*.lua (session_lib.lua's prelude).
var (
	RegistryCreate = load("registry_create")
	RegistryUpdate = load("registry_update")
)
