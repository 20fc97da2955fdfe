package messages

// The scripts tests outside the package run by hand.
var (
	MessagesIndex = luaScripts.Index
	MessagesRead  = luaScripts.Read
)

// MessagesStage runs the steps of a staged append by hand.
var MessagesStage = luaScripts.Stage
