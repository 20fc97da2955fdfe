// Package pricing prices LLM calls: a model name and its token counts become
// a cost in USD, and a model name becomes a bounded Prometheus label value
// (its family, or "other": never the raw name).
//
// Prices are kept in the shape of LiteLLM's price table
// (https://github.com/BerriAI/litellm/blob/main/model_prices_and_context_window.json):
// an object keyed by model name whose values hold input_cost_per_token and
// output_cost_per_token (USD per token). The built-in table (prices.json,
// embedded) covers the common chat and embedding models of OpenAI,
// Anthropic, Google (Gemini API) and Mistral at their list prices, each
// entry with its source and as_of; tiered prices keep the base tier, and
// cached-input, batch and audio/image rates are not modelled.
// MODEL_PRICES_FILE names a file in the same shape merged over it (the file
// wins per model, compared case-insensitively); LiteLLM's own file is
// accepted unchanged (entries with neither cost and "sample_spec" skipped).
// A bad file is a configuration error naming MODEL_PRICES_FILE.
//
// A name is matched case-insensitively, as given and with its provider
// prefix removed (everything through any '/', then Bedrock's letters-only
// dot segments such as "us.anthropic."); the key covering more of the bare
// name wins, on a tie the provider-specific key. Within a candidate an
// exact key wins, else the longest key K such that the name is K followed
// by '-', '@' or ':' and anything ("gpt-4o-mini-2024-07-18" → "gpt-4o-mini",
// "claude-3-5-sonnet@20240620" → "claude-3-5-sonnet"). This is Cognee's
// longest-prefix rule with a name boundary, because plain prefixes misprice
// ("gpt-4" is a prefix of "gpt-4o" and "gpt-4.1"): '.' never separates a
// variant, and after a key ending in a digit, '-' and a one- or two-digit
// number continues the version ("claude-opus-4-5" is not "claude-opus-4"),
// except "-0" (Anthropic's alias). Dates, pins ("-001") and words
// ("-latest") are variants. An unknown name is better unpriced (cost 0,
// counted by the caller) than priced as a sibling. Names over 256 bytes are
// never priced; a lookup is a few map probes and allocates nothing for a
// lower-case name; a Table is immutable and safe for concurrent use.
//
// Files:
//   - pricing.go: Price, Table (Lookup, Cost, Label, Families), Default.
//   - load.go: Load (MODEL_PRICES_FILE over the built-ins), the LiteLLM
//     parser and its errors placed at line and column.
//   - prices.json: the built-in prices; edit it, not code, when a price
//     changes.
//   - testdata/litellm_sample.json: a small LiteLLM-shaped file (sample_spec,
//     entries to skip, overrides, provider keys).
//
// Tests: pricing_test.go checks matching on real model names, costs,
// loading and its errors, that every built-in entry has its source and
// prices its own variants, lookups allocating nothing, concurrent lookups
// and a big table; BenchmarkLookup.
package pricing
