package lua

// Messages scripts (messages module): session scripts over the same KEYS
// and first ARGVs as session_*.lua, with lib/msgtree.lua and lib/messages.lua (the
// tree helpers and the append).
var (
	MessagesAppend = load("messages_append")
	MessagesRead   = load("messages_read", ReadOnly)
)

// Writes on the tree.
var (
	MessagesPut    = load("messages_put")
	MessagesDelete = load("messages_delete")
	MessagesPop    = load("messages_pop")
	MessagesClear  = load("messages_clear")
)

// Sessions made from a session.
var (
	MessagesFork  = load("messages_fork")
	MessagesSplit = load("messages_split")
)

// MessagesIndex puts a batch of a session's messages into the search index
// (a fork's copies).
var MessagesIndex = load("messages_index")

// MessagesTransaction applies one history transaction (append, replace a
// suffix, replace the whole history), idempotent by its operation id.
var MessagesTransaction = load("messages_transaction")

// MessagesCompact stores a compaction overlay.
var MessagesCompact = load("messages_compact")
