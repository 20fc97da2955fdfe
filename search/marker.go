package search

import "github.com/agentsidecar/agentsidecar/redisstore"

// MarkerField is the on-demand index marker: the field search of the
// user's marker, set by the user's first relevance search (search_mark)
// with the build's cursor hash (agent_search_stats). Every session write
// reads it with its record (search.lua, wanted): a user who never
// searched writes no document.
var MarkerField = redisstore.RegisterMarkerField(redisstore.MarkerField{
	Name: "search", Owner: "search",
	Description: "`1` once the user's first relevance search made the user's index (`SEARCH_INDEX=on-demand`): the user's writes then index their documents",
})
