// Package messages is the messages module (docs/messages.md): a session's
// messages as a tree (branches, the path to a leaf, paging, pop), beside
// Cognee's Q&A entries and sharing the session's record, TTL and delete;
// also compactions, the frameworks' history transactions, fork and split,
// and the user-wide relevance search (GET /v1/users/{user_id}/search).
//
// Every write is one script (messages_*.lua, on the libraries msgstage.lua,
// msgtree.lua, messages.lua and compactions.lua) over the shared session
// runner, but a big append: bounded steps staged where no reader looks,
// then made visible in one (stage.go). A
// session keeps its messages in five keys whatever their number, and a page
// of a path costs O(limit + log n): each tree node holds a skew-binary jump
// pointer. A message's raw fields are stored and answered as sent; retries
// are idempotent by Idempotency-Key or operation id (a ring in the tree's
// hash). Messages another path wrote (a fork's copies, messages written
// before the user's first search) reach the search index by a bounded
// catch-up (index.go).
//
// Files:
//   - messages.go: Factory, the module, its routes, the reads and their
//     handlers.
//   - config.go: Config (SESSION_MAX_MESSAGES, SESSION_COMPACT_AFTER_TOKENS)
//     and the host's shared limits it takes.
//   - message.go: a message's checks and encoding (raw fields, fingerprint,
//     text and tokens, UUIDv7 ids) and its limits.
//   - write.go: PUT, PATCH (a checked read-then-write, retried), DELETE,
//     pop, clear.
//   - transactions.go: POST .../messages/transactions: append_items,
//     replace_suffix, replace_history, each one script.
//   - replacecall.go: the replace_function_call transaction.
//   - compactions.go: compaction overlays (create, list, the synthetic
//     compaction:<id> message).
//   - sessions.go: fork and split, sessions made from a session.
//   - store.go: Store, the module's scripts and their refusals.
//   - stage.go: staged appends (an append past one bounded step, and
//     append_items sent in parts): open, puts, the commit, the drop of an
//     abandoned stage; Store.Run, which waits for another's stage.
//   - index.go: the messages' search catch-up (Store.CatchUpStep).
//   - search.go: the user-wide search over search.Index.Find.
//   - search_texts.go: a message's texts for search snippets.
//   - keys.go: the module's families (tree, children, compactions; the
//     messages and their order are redisstore's) and SessionKeys.
//   - scripts.go: embeds and registers the scripts and libraries.
//   - msgtree.lua: the tree: nodes, jump pointers, children by lex range,
//     subtree walks, path copies.
//   - msgstage.lua: a staged append in progress as the record holds it
//     (msg_stage): writes wait for it, readers leave its messages out.
//   - messages.lua: the writes (append with its checks, the key ring).
//   - compactions.lua: compactions on a path and the path's tokens.
//   - messages_append.lua, messages_put.lua, messages_delete.lua,
//     messages_pop.lua, messages_clear.lua: the writes.
//   - messages_read.lua: the reads (path page with overlays, one message,
//     children, compactions).
//   - messages_compact.lua: a compaction of a range.
//   - messages_transaction.lua: one history transaction, all or nothing.
//   - messages_fork.lua, messages_split.lua: a new session from this one.
//   - messages_index.lua: one step of the search catch-up.
//   - messages_stage_open.lua, messages_stage_put.lua,
//     messages_stage_commit.lua, messages_stage_drop.lua: the steps of a
//     staged append.
//
// Tests: messages_test.go, tree_test.go, write_test.go, answers_test.go,
// reply_test.go, keyring_test.go and children_cap_test.go hold paths,
// paging, random trees, retries, conflicts, concurrent writers and poppers,
// and every refusal's answer; transactions_test.go the transactions
// (repeats, stale suffixes writing nothing, concurrent replacements);
// compactions_test.go and suggest_event_test.go compactions;
// sessions_test.go, blocks_test.go and registry_test.go fork and split and
// what other modules see; search_*_test.go, fork_search_test.go and
// transactions_search_test.go the search index (search_ttl_test.go its
// TTLs, noindex_test.go writes without a document leaving it alone); bounded_test.go and
// sizes_test.go bounded work and framework-sized turns; stage_test.go
// staged appends and replace_history (SLOWLOG at 5 ms, readers before or
// after, concurrent big appends, repeats, parts, an abandoned stage, a
// write that waits), stage_whole_test.go a staged replace_history's
// repeats and drop, and stage_steps_test.go the steps run by hand (a
// writer back during the drop, forks onto a staged session, a later part
// with no stage, a stage's longest life);
// metadata_test.go, surrogate_test.go and utf8_test.go raw fields kept as
// sent; events_test.go the live events; message_fuzz_test.go a fuzzer;
// search_bench_test.go and fork_bench_test.go benchmarks.
package messages
