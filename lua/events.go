package lua

// Events scripts (events module): session scripts over the same KEYS and
// first ARGVs as session_*.lua (lib/session.lua).
var (
	EventsCustom = load("events_custom")
	EventsAbort  = load("events_abort")
)
