package sessions

// The scripts tests outside the package run by hand.
var (
	SessionAppend     = luaScripts.Append
	SessionIndexBuild = luaScripts.IndexBuild
)
