package redisstore

// Keys of the search index (the session scripts write them; package search
// reads them for the modules).

// SearchPostings is the user's postings of term: agent_search:<tag><u>:<term>,
// a sorted set of "<s>\t<kind>\t<id>\t<ver>\t<tf>\t<length>" by time (µs).
func (l Layout) SearchPostings(user, term string) string {
	return l.UserKey(SearchPostingsFamily, user, term)
}

// SearchStats is the user's document count and total length (hash n, len):
// agent_search_stats:<tag><u>.
func (l Layout) SearchStats(user string) string {
	return l.UserKey(SearchStatsFamily, user)
}

// SearchDocs is a session's indexed documents: agent_search_docs:<tag><u>:<s>,
// a hash "<kind>\t<id>" -> "<ver>\t<length>\t<time>\t<digest>\t<preview>", one of the
// session's own keys.
func (l Layout) SearchDocs(user, session string) string {
	return l.SessionKey(SearchDocsFamily, user, session)
}

// SearchEntryDocs is a session's indexed Q&A entries:
// agent_search_entry_docs:<tag><u>:<s>, a hash "entry\t<qa_id>" -> as in
// SearchDocs, and " cov" -> "<n>\t<fingerprint>", the entries list's prefix
// the index covers. One of the session's own keys.
func (l Layout) SearchEntryDocs(user, session string) string {
	return l.SessionKey(SearchEntryDocsFamily, user, session)
}

// SearchDocsOf is the session's documents of kind ("entry" or "message").
func (l Layout) SearchDocsOf(user, session, kind string) string {
	if kind == "entry" {
		return l.SearchEntryDocs(user, session)
	}
	return l.SearchDocs(user, session)
}

// SearchPurge is one of the user's purge keys: agent_search_purge:<tag><u>:<n>,
// the documents hash of a deleted session (or a cleared kind) until its
// postings are removed (lua/search_purge.lua).
func (l Layout) SearchPurge(user, n string) string {
	return l.UserKey(SearchPurgeFamily, user, n)
}
