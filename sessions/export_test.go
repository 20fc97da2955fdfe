package sessions

// The scripts tests outside the package run by hand.
var (
	SessionAppend     = sessionAppend
	SessionIndexBuild = sessionIndexBuild
)
