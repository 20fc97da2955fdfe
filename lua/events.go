package lua

// Events scripts (events module): session scripts over the same KEYS and
// first ARGVs as session_*.lua (lib/session.lua).
var (
	EventsCustom = load("events_custom")
	EventsAbort  = load("events_abort")
)

// EventsWatch marks an event stream watched (its own KEYS and ARGV, not a
// session script's).
var EventsWatch = load("events_watch")
