package messages

// The scripts tests outside the package run by hand.
var (
	MessagesIndex = luaScripts.Index
	MessagesRead  = luaScripts.Read
)
