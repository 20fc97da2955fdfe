// Package pricing prices LLM calls: a model name and its token counts become
// a cost in USD, and a model name becomes a bounded Prometheus label value.
//
// # The table
//
// Prices are kept in LiteLLM's model_prices_and_context_window.json shape: a
// JSON object keyed by model name whose values hold input_cost_per_token and
// output_cost_per_token (USD per token, 2.5e-06 = $2.50 per million tokens).
// The built-in table (prices.json, embedded in the binary) covers the common
// chat and embedding models of OpenAI, Anthropic, Google (Gemini API) and
// Mistral at their public list prices; each entry also names its source (the
// vendor's pricing page) and as_of (the month the price was known current).
// Where a vendor tiers a price by prompt length (Gemini 2.5 Pro, Gemini 3 Pro
// above 200k tokens; Claude Sonnet 4 with the 1M context) the table holds the
// base tier; cached-input, batch and audio/image-input rates are not modelled.
// Prices change: MODEL_PRICES_FILE is the way to correct or extend them.
//
// MODEL_PRICES_FILE names a JSON file in the same shape, merged over the
// built-ins (the file wins per model, compared case-insensitively). LiteLLM's
// own file is accepted unchanged: entries with neither cost field (image,
// audio, rerank models) and the "sample_spec" entry are skipped, other fields
// are ignored, a missing one of the two costs counts as 0. An unreadable file,
// malformed JSON, an entry that is not an object, or a cost that is not a
// non-negative number is a configuration error naming MODEL_PRICES_FILE.
//
// # Matching a model name
//
// Names are matched case-insensitively (LiteLLM's keys are lower-case, but
// Azure deployments and some gateways report "GPT-4o"); the family returned is
// the table key as written. A name is priced by the key covering most of it:
//
//  1. The name is tried as given and with its provider prefix removed, as
//     LiteLLM and Cognee write it: everything through any '/'
//     ("openai/gpt-4o-mini", "vertex_ai/claude-sonnet-4@20250514",
//     "openrouter/anthropic/claude-sonnet-4") and then Bedrock's leading
//     letters-only dot segments ("us.anthropic.claude-...", "mistral.mistral-large-2407-v1:0").
//     A key that covers more of the bare model name wins; on a tie the
//     provider-specific key ("azure/gpt-4o" from a price file) wins.
//  2. Within one candidate, an exact key wins, else the longest key K such
//     that the name is K followed by '-', '@' or ':' and anything
//     ("gpt-4o-mini-2024-07-18" → "gpt-4o-mini",
//     "claude-3-5-sonnet-20241022" → "claude-3-5-sonnet",
//     "claude-3-5-sonnet@20240620" → "claude-3-5-sonnet",
//     "mistral-large-latest" → "mistral-large").
//
// This is Cognee's longest-prefix rule with a name boundary, because plain
// prefixes misprice: "gpt-4" is a prefix of "gpt-4o" and "gpt-4.1" (at 12× and
// 15× their price). So '.' never separates a variant ("gpt-4.1", "gpt-5.1",
// "gemini-2.5" are other models than "gpt-4", "gpt-5", "gemini-2"), and after
// a key ending in a digit, '-' and a one- or two-digit number continues the
// version ("claude-opus-4-5" is not "claude-opus-4"; it costs a third), except
// "-0" ("claude-opus-4-0" is Anthropic's alias of "claude-opus-4"). Dates
// ("-20250514", "-2024-08-06", "-0613"), pins ("-001") and words ("-latest",
// "-preview", "-v2") are variants of the key. An unknown name is better
// unpriced (cost 0, counted by the caller) than silently priced as a sibling.
//
// Names longer than 256 bytes are never priced. Lookups do a handful of map
// probes (one per '-', '@' or ':' of the name) and allocate nothing for a
// lower-case name, whatever the table size; a Table is immutable and safe for
// concurrent use.
package pricing

import (
	_ "embed"
	"sort"
	"strings"
	"sync"
)

// FileVar is the environment variable naming the price file merged over the
// built-in table.
const FileVar = "MODEL_PRICES_FILE"

// Other is the label value of every model without a price.
const Other = "other"

// maxNameLen bounds the names Lookup considers.
const maxNameLen = 256

//go:embed prices.json
var builtinJSON []byte

// Price is a model's list price.
type Price struct {
	InputPerToken  float64 // USD
	OutputPerToken float64 // USD
}

type entry struct {
	family string // the key as written in its table
	price  Price
}

// Table is an immutable price table; see the package doc for how names match.
type Table struct {
	byKey    map[string]entry // lower-cased key → entry
	maxKey   int              // longest key, in bytes
	families []string         // built-in families, sorted
}

var builtin = sync.OnceValue(func() *Table {
	models, err := parse(builtinJSON)
	if err != nil {
		panic("pricing: embedded prices.json: " + err.Error())
	}
	t := &Table{byKey: make(map[string]entry, len(models))}
	for _, m := range models {
		t.set(m.name, m.price)
		t.families = append(t.families, m.name)
	}
	sort.Strings(t.families)
	return t
})

// Default returns the built-in table.
func Default() *Table { return builtin() }

// set stores a price under name; a name already present (in any case) keeps
// its spelling, so a file overriding "gpt-4o" as "GPT-4o" does not rename the
// pre-created "gpt-4o" series.
func (t *Table) set(name string, p Price) {
	k := strings.ToLower(name)
	e, ok := t.byKey[k]
	if !ok {
		e.family = name
	}
	e.price = p
	t.byKey[k] = e
	t.maxKey = max(t.maxKey, len(k))
}

// Lookup returns the family (table key) a model name matches and its price.
func (t *Table) Lookup(model string) (family string, p Price, ok bool) {
	if model == "" || len(model) > maxNameLen {
		return "", Price{}, false
	}
	s := strings.ToLower(model)
	lastSlash := strings.LastIndexByte(s, '/')
	bare := bareStart(s, lastSlash+1)
	var best entry
	bestCover := 0
	for start := 0; start <= bare; start++ {
		candidate := start == 0 || s[start-1] == '/' || (start > lastSlash && s[start-1] == '.')
		if !candidate || start == len(s) {
			continue
		}
		e, n := t.longest(s[start:])
		// How much of the bare model name the key covers: a key matching
		// "azure/gpt-4o" covers "gpt-4o" of "azure/gpt-4o-mini", less than
		// "gpt-4o-mini" does.
		if cover := n - (bare - start); n > 0 && cover > bestCover {
			best, bestCover = e, cover
		}
	}
	if bestCover == 0 {
		return "", Price{}, false
	}
	return best.family, best.price, true
}

// bareStart skips Bedrock's leading letters-only dot segments
// ("us.anthropic.") of s[from:].
func bareStart(s string, from int) int {
	for i := from; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.' && i > from && i+1 < len(s):
			from = i + 1
		case c < 'a' || c > 'z':
			return from
		}
	}
	return from
}

// longest returns the longest key that s is or starts with at a boundary, and
// its length (0: none).
func (t *Table) longest(s string) (entry, int) {
	for i := min(len(s), t.maxKey); i > 0; i-- {
		if i < len(s) && !boundary(s, i) {
			continue
		}
		if e, ok := t.byKey[s[:i]]; ok {
			return e, i
		}
	}
	return entry{}, 0
}

// boundary reports whether s[:i] may be a family of s (s[i] exists).
func boundary(s string, i int) bool {
	switch s[i] {
	case '@', ':':
		return true
	case '-':
		if !isDigit(s[i-1]) {
			return true
		}
		// After a version number, "-5" continues it ("claude-opus-4-5");
		// "-0", dates and pins do not.
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		digits := j - (i + 1)
		if j < len(s) && !strings.ContainsRune("-@:._/", rune(s[j])) {
			return true // "-5x": not a number
		}
		return digits == 0 || digits > 2 || s[i+1:j] == "0"
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Cost prices a call; ok is false (cost 0) for a model with no price.
// Negative token counts count as 0 (callers validate their input).
func (t *Table) Cost(model string, tokensIn, tokensOut int64) (cost float64, family string, ok bool) {
	family, p, ok := t.Lookup(model)
	if !ok {
		return 0, "", false
	}
	return float64(max(tokensIn, 0))*p.InputPerToken + float64(max(tokensOut, 0))*p.OutputPerToken, family, true
}

// Families returns the built-in family names, sorted: the model label
// values the metrics pre-create, with the operator's METRICS_MODEL_LABELS
// (a price file's other families label as themselves on first use, up to a
// cap; see usage's labeler). Other is not included. The slice is the
// caller's.
func (t *Table) Families() []string {
	return append([]string(nil), t.families...)
}

// Label is the value of a Prometheus `model` label for a model name: its
// family when priced, else "other" — never the raw name (cardinality).
func (t *Table) Label(model string) string {
	if family, _, ok := t.Lookup(model); ok {
		return family
	}
	return Other
}
