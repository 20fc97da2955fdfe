package lua

// Registry scripts (registry module): session scripts over the same KEYS
// and first ARGVs as session_*.lua (lib/session.lua).
var (
	RegistryCreate    = load("registry_create")
	RegistryUpdate    = load("registry_update")
	RegistryActive    = load("registry_active")
	RegistryActiveEnd = load("registry_active_end")
	RegistryState     = load("registry_state")
	RegistryUserState = load("registry_user_state")
	// RegistryMetaPrune is not a session script: KEYS are an index and a record.
	RegistryMetaPrune = load("registry_meta_prune")
)
