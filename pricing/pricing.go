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
