package checkpoints

// ScriptList is checkpoints_list, for the tests that call it directly.
var ScriptList = luaScripts.List
