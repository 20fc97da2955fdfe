// Package usage is the usage module (docs/usage.md): each session's
// lifecycle (running, completed, failed; "abandoned" derived at read time,
// never stored), its tokens and cost per model, the listings of sessions (by
// user or across users, by status and metadata, cursor pages) and the
// operator summaries (stats, cost by model over the per-day hashes).
//
// Every write is one Lua script over the shared session runner that also
// keeps the status indexes current. A usage post is counted once per
// Idempotency-Key (a ring of the 1 000 newest, a key of the session), priced
// from the pricing table unless the caller sends cost_usd, summed as integer
// nano-USD with every sum checked before any write, and model names are
// bounded (folded to "other" past USAGE_MAX_MODELS_PER_SESSION and _PER_DAY)
// as are the metrics' model labels.
//
// Files:
//   - usage.go: Factory, Config (MODEL_PRICES_FILE,
//     USAGE_MAX_MODELS_PER_SESSION, USAGE_MAX_MODELS_PER_DAY,
//     USAGE_BY_MODEL_DAYS, METRICS_MODEL_LABELS, METRICS_MAX_MODEL_LABELS),
//     the routes and handlers, EstimateTokens (Cognee's len(text) // 4).
//   - store.go: Store: AddUsage and End, and the limits on model names.
//   - metrics.go: the LLM counters and labeler: known families at zero, a
//     bounded number more on first use, the rest "other".
//   - scripts.go: embeds and registers the scripts below.
//   - session_usage.lua: one call's tokens and cost into the record, its
//     per-model breakdown, the totals and the day's per-model hash.
//   - session_end.lua: complete or fail (checks before the first write).
//
// Tests: usage_test.go runs lifecycle, abandoned, exact concurrent sums,
// estimates and prices, idempotency, pages and bad input on both backends;
// integrity_test.go refused writes changing nothing (overflow, wrong types,
// cost caps) and the ledger's invariants after random posts; limits_test.go
// and labels_internal_test.go the bounds on model names, labels and
// idempotency keys, and the settings' ranges; main_test.go shares one
// cluster.
package usage
