package redisstore

// Keys of the search index (the session scripts write them; package search
// reads them for the modules). The index of a session's documents of one
// kind is one hash, a session key: it slides, ends and goes with the
// session (lua/lib/search.lua).

// SearchStats is the user's on-demand index marker: agent_search_stats:<tag><u>.
func (l Layout) SearchStats(user string) string {
	return l.UserKey(SearchStatsFamily, user)
}

// SearchSessions is the user's sessions holding documents, by when their
// documents last changed (µs): agent_search_sessions:<tag><u>.
func (l Layout) SearchSessions(user string) string {
	return l.UserKey(SearchSessionsFamily, user)
}

// SearchDocs is the search index of a session's messages:
// agent_search_docs:<tag><u>:<s>.
func (l Layout) SearchDocs(user, session string) string {
	return l.SessionKey(SearchDocsFamily, user, session)
}

// SearchEntryDocs is the search index of a session's Q&A entries:
// agent_search_entry_docs:<tag><u>:<s>; " cov" -> "<n>\t<fingerprint>", the
// entries list's prefix it covers.
func (l Layout) SearchEntryDocs(user, session string) string {
	return l.SessionKey(SearchEntryDocsFamily, user, session)
}

// SearchDocsOf is the session's index of kind ("entry" or "message").
func (l Layout) SearchDocsOf(user, session, kind string) string {
	if kind == "entry" {
		return l.SearchEntryDocs(user, session)
	}
	return l.SearchDocs(user, session)
}
