// Package search is the sidecar's relevance search over Q&A entries and
// messages: one analyser for indexing and querying (Unicode words, case-
// and accent-folded, English stop words dropped, English Snowball stems:
// "deploy" finds "deployment" and "deployed"), BM25 scoring, plain-text
// snippets, and the host's one Index (sidecar.Shared) that the sessions,
// messages and blocks modules use. The stemmer is
// github.com/kljensen/snowball; accent folding is Unicode NFD with the marks
// dropped (golang.org/x/text).
//
// The index itself lives in Redis, kept by the write scripts in the same
// script as the write (search.lua): one hash per session and kind (a session
// key, so it slides, expires and is deleted with the session) and the
// user's list of sessions with documents. SEARCH_INDEX picks which writes
// index (Mode: on-demand, the default, indexes a user's writes only once
// the user's first relevance search made an index, built in bounded steps,
// newest sessions first; eager; off). Find reads the hashes newest first
// within fixed bounds, so a query's Redis work is bounded whatever the user
// holds.
//
// Files:
//   - search.go: the analyser (Analyze, Query), Score (BM25), Snippet,
//     Collapse, Preview.
//   - mode.go: Mode, SEARCH_INDEX's values, and the write spec each mode
//     sends the scripts.
//   - index.go: Index (FromDeps): each module's catch-up Step, Prepare (the
//     on-demand build), WriteMode, Touch, the background worker, and the
//     pause between two catch-up steps.
//   - marker.go: MarkerField, the user's on-demand marker.
//   - find.go: Index.Find and its limits.
//   - postings.go: reading the sessions' hashes in batches, newest first.
//   - records.go: candidates' best bounds and the records that settle them.
//   - stale.go: expired sessions dropped from the user's list.
//   - snippets.go: Texts and RegisterTexts, each kind's snippet fetcher.
//   - scripts.go: embeds and registers the Lua below.
//   - search.lua: the index library every indexing write includes
//     (documents, postings, records, the user's sessions list, wanted).
//   - search_mark.lua: the on-demand marker and the build's cursor.
//
// Tests: search_test.go holds the analyser, snippets and BM25;
// find_test.go Find over hand-written hashes on every backend (ranking, the
// postings bound newest first, expired sessions dropped);
// find_bounds_test.go racing rewrites, commands and snippets bounded;
// find_bench_test.go BenchmarkFind. The index's writes are tested with the
// modules that write it (sessions, messages, blocks).
package search
