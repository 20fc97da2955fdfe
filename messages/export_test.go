package messages

import "github.com/agentsidecar/agentsidecar/lua"

// The scripts tests outside the package run by hand.
var (
	MessagesIndex = luaScripts.Index
	MessagesRead  = luaScripts.Read
)

// MessagesStage are the steps of a staged append, to run by hand.
var MessagesStage = map[string]*lua.Script{
	"open": luaScripts.StageOpen, "put": luaScripts.StagePut, "commit": luaScripts.StageCommit, "drop": luaScripts.StageDrop,
}
