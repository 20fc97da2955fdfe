// Package sessions is the sessions module (docs/sessions.md): Q&A entries
// with feedback, agent traces and session context, stored exactly as
// Cognee's Redis adapter stores them (its lists, its JSON bytes), so Cognee
// and the sidecar share one session; every write is one atomic Lua script
// over the shared session runner (sessionstore), which keeps the record,
// indexes and TTL with it.
//
// Cognee writes the lists too and keeps no index, so the scripts keep the
// id indexes (entries by qa_id, context by id) as a covered prefix of the
// list: a script that finds the index short answers index_build, and the
// Go side runs bounded steps of session_index_build before running it
// again (index.go). Reads are bounded whatever a session holds (one
// script, SIDECAR_MAX_ANSWER_BYTES, Sidecar-Truncated). Entries go into the
// relevance search index in the write's own script; entries another
// program appended are taken in by a bounded catch-up (read, analyse in Go,
// write checked by each entry's SHA1) run by search.Index.
//
// Files:
//   - sessions.go: Factory, the module, its routes (entries, feedback,
//     search, traces, context, session delete) and handlers.
//   - decode.go: the append and feedback bodies through the quick path
//     (sidecar.ObjectFields), else the full decoder.
//   - store.go: Store, the module's writes and reads over the shared runner.
//   - index.go: the index-build loop (MaxIndexSteps, MaxIndexRounds).
//   - reads.go: bounded list reads and the word search (ReadPage,
//     PageBytes, MaxListElements, SearchMaxExamined, ConcurrentReads).
//   - search.go: entries' search documents: analyseEntry, CatchUp,
//     ReindexEntry after a text PATCH.
//   - search_texts.go: an entry's texts for search snippets.
//   - metrics.go: entries-appended and feedback counters.
//   - scripts.go: embeds and registers the scripts below.
//   - session_append.lua: an entry appended idempotently by qa_id, trimmed
//     to SESSION_MAX_ENTRIES, with its search document.
//   - session_entry_get.lua, session_entry_update.lua,
//     session_entry_delete.lua: one entry by qa_id: read, byte-preserving
//     field edits (PATCH, feedback), delete.
//   - session_trace_append.lua: a trace step.
//   - session_context_append.lua, session_context_update.lua,
//     session_context_delete.lua: context entries by id.
//   - session_read.lua: a bounded read of one list at one moment.
//   - session_index_build.lua: one bounded step of an id index.
//   - session_search_pending.lua, session_search_catchup.lua: the
//     catch-up's read step and its checked write.
//   - session_search_entry.lua: an entry's document again after its text
//     changed.
//   - testdata/cognee_adapter.py: a redis-py stand-in for Cognee's adapter;
//     testdata/fuzz/: fuzz corpora.
//
// Tests: sessions_test.go, answers_test.go, integrity_test.go,
// refusals_test.go and reads_test.go run the routes on every backend
// (lifecycle, TTL slides, trims, refusals writing nothing, byte caps);
// cognee_interop_test.go, index_test.go, index_aba_test.go, big_test.go and
// monitor_test.go share sessions with Cognee's writes (bounded work checked
// by MONITOR); search_*_test.go hold the relevance index (writes, catch-up,
// on-demand, forgetting deleted text, bounded steps under SLOWLOG);
// concurrency_test.go and failover_test.go hold under concurrent writers and
// a master killed on a cluster; fuzzers in store_fuzz_test.go (with
// store_fuzz_index_test.go), decode_test.go and analyse_fuzz_test.go;
// benchmarks in bench_test.go and search_*_bench_test.go.
package sessions
