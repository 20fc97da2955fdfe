package pricing

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
)

func TestLookupDefault(t *testing.T) {
	tab := Default()
	cases := []struct {
		model, family string // family "" = not priced
	}{
		// exact, case-insensitive
		{"gpt-4o", "gpt-4o"},
		{"GPT-4o", "gpt-4o"},
		{"Claude-3-Haiku-20240307", "claude-3-haiku"},
		// dated names: longest key at a boundary
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4o-2024-05-13", "gpt-4o-2024-05-13"},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"},
		{"gpt-4.1-2025-04-14", "gpt-4.1"},
		{"gpt-4-0613", "gpt-4"},
		{"gpt-4-turbo-2024-04-09", "gpt-4-turbo"},
		{"gpt-4-turbo-preview", "gpt-4-turbo"},
		{"gpt-3.5-turbo-0125", "gpt-3.5-turbo"},
		{"gpt-5-mini-2025-08-07", "gpt-5-mini"},
		{"gpt-5-2025-08-07", "gpt-5"},
		{"gpt-5-chat-latest", "gpt-5"},
		{"gpt-5.1-2025-11-13", "gpt-5.1"},
		{"o1-2024-12-17", "o1"},
		{"o1-mini-2024-09-12", "o1-mini"},
		{"o3-mini-2025-01-31", "o3-mini"},
		{"o4-mini-2025-04-16", "o4-mini"},
		{"codex-mini-latest", "codex-mini"},
		{"text-embedding-3-small", "text-embedding-3-small"},
		{"claude-3-5-sonnet-20241022", "claude-3-5-sonnet"},
		{"claude-3-5-sonnet-latest", "claude-3-5-sonnet"},
		{"claude-3-7-sonnet-20250219", "claude-3-7-sonnet"},
		{"claude-sonnet-4-20250514", "claude-sonnet-4"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-opus-4-1-20250805", "claude-opus-4-1"},
		{"claude-opus-4-5-20251101", "claude-opus-4-5"},
		{"claude-haiku-4-5-20251001", "claude-haiku-4-5"},
		{"claude-opus-4-0", "claude-opus-4"}, // Anthropic's alias
		{"gemini-2.0-flash-001", "gemini-2.0-flash"},
		{"gemini-2.0-flash-lite-001", "gemini-2.0-flash-lite"},
		{"gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"},
		{"gemini-2.5-flash-lite-preview-09-2025", "gemini-2.5-flash-lite"},
		{"gemini-3-pro-preview", "gemini-3-pro"},
		{"gemini-1.5-flash-8b-001", "gemini-1.5-flash-8b"},
		{"mistral-large-latest", "mistral-large"},
		{"mistral-large-2411", "mistral-large"},
		{"mistral-medium-latest", "mistral-medium"},
		{"mistral-small-2506", "mistral-small"},
		{"codestral-latest", "codestral"},
		{"codestral-embed-2505", "codestral-embed"},
		{"open-mistral-nemo-2407", "open-mistral-nemo"},
		// provider prefixes, as LiteLLM and Cognee write them
		{"openai/gpt-4o-mini", "gpt-4o-mini"},
		{"azure/gpt-4o", "gpt-4o"},
		{"anthropic/claude-3-5-haiku-20241022", "claude-3-5-haiku"},
		{"gemini/gemini-2.5-flash", "gemini-2.5-flash"},
		{"gemini/gemini-2.5-pro", "gemini-2.5-pro"},
		{"mistral/mistral-small-latest", "mistral-small"},
		{"vertex_ai/gemini-1.5-pro-002", "gemini-1.5-pro"},
		{"vertex_ai/claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"},
		{"vertex_ai/claude-opus-4@20250514", "claude-opus-4"},
		{"bedrock/anthropic.claude-3-haiku-20240307-v1:0", "claude-3-haiku"},
		{"bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"},
		{"bedrock/mistral.mistral-large-2407-v1:0", "mistral-large"},
		{"openrouter/anthropic/claude-sonnet-4", "claude-sonnet-4"},
		{"OpenAI/GPT-4o-Mini", "gpt-4o-mini"},
		// the boundary rule: no sibling prices another model
		{"gpt-4omni", ""},
		{"gpt-4.5-preview", ""},        // not "gpt-4"
		{"gpt-5.3", ""},                // not "gpt-5"
		{"gemini-2", ""},               // no family
		{"gemini-2.5", ""},             // not a model
		{"claude-opus-4-6", ""},        // a new version, not "claude-opus-4"
		{"claude-sonnet-4-7-2026", ""}, // likewise
		{"o3x", ""},
		{"gpt-4o.1", ""},
		// unknown and degenerate names
		{"llama3", ""},
		{"ft:gpt-4o-mini-2024-07-18:org::abc", ""},
		{"", ""},
		{"-", ""},
		{"/", ""},
		{"openai/", ""},
		{"us.", ""},
		{"gpt-4o-" + strings.Repeat("x", 300), ""},
	}
	for _, c := range cases {
		family, p, ok := tab.Lookup(c.model)
		if family != c.family || ok != (c.family != "") {
			t.Errorf("Lookup(%q) = %q, %v; want %q", c.model, family, ok, c.family)
			continue
		}
		if want, _, _ := tab.Lookup(c.family); ok && p != tab.byKey[want].price {
			t.Errorf("Lookup(%q) price %+v, family %q has %+v", c.model, p, want, tab.byKey[want].price)
		}
		wantLabel := c.family
		if !ok {
			wantLabel = Other
		}
		if got := tab.Label(c.model); got != wantLabel {
			t.Errorf("Label(%q) = %q, want %q", c.model, got, wantLabel)
		}
	}
}

func TestCost(t *testing.T) {
	tab := Default()
	cases := []struct {
		model   string
		in, out int64
		want    float64
		family  string
	}{
		{"gpt-4o", 1_000_000, 1_000_000, 2.50 + 10.00, "gpt-4o"},
		{"gpt-4o-mini-2024-07-18", 1000, 500, 1000*0.15e-6 + 500*0.60e-6, "gpt-4o-mini"},
		{"claude-3-5-sonnet-20241022", 1000, 500, 0.003 + 0.0075, "claude-3-5-sonnet"},
		{"anthropic/claude-opus-4-5", 2_000_000, 0, 10.00, "claude-opus-4-5"},
		{"text-embedding-3-small", 1_000_000, 0, 0.02, "text-embedding-3-small"},
		{"gemini-2.5-pro", 0, 0, 0, "gemini-2.5-pro"},
		{"gemini-2.5-pro", -5, 1_000_000, 10.00, "gemini-2.5-pro"}, // negative counts as 0
	}
	for _, c := range cases {
		got, family, ok := tab.Cost(c.model, c.in, c.out)
		if !ok || family != c.family || math.Abs(got-c.want) > 1e-12*max(1, c.want) {
			t.Errorf("Cost(%q, %d, %d) = %v, %q, %v; want %v, %q", c.model, c.in, c.out, got, family, ok, c.want, c.family)
		}
	}
	if got, family, ok := tab.Cost("no-such-model", 1000, 1000); got != 0 || family != "" || ok {
		t.Errorf("Cost(unknown) = %v, %q, %v; want 0, \"\", false", got, family, ok)
	}
}

func TestLoad(t *testing.T) {
	if tab, err := Load(""); err != nil || tab != Default() {
		t.Fatalf(`Load("") = %p, %v; want Default()`, tab, err)
	}
	tab, err := Load(filepath.Join("testdata", "litellm_sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		model, family string // "" = not priced
		in, out       float64
	}{
		{"gpt-4o", "gpt-4o", 2e-06, 8e-06}, // the file wins
		{"gpt-4o-2024-08-06", "gpt-4o", 2e-06, 8e-06},
		{"gpt-4o-mini", "gpt-4o-mini", 0.15e-6, 0.60e-6}, // built-in kept
		{"azure/gpt-4o", "azure/gpt-4o", 2.75e-06, 1.1e-05},
		{"azure/gpt-4o-2024-08-06", "azure/gpt-4o", 2.75e-06, 1.1e-05}, // tie: provider-specific
		{"azure/gpt-4o-mini", "gpt-4o-mini", 0.15e-6, 0.60e-6},         // covers more of the name
		{"mistral/mistral-large-latest", "mistral/mistral-large-latest", 2e-06, 6e-06},
		{"mistral-large-latest", "mistral-large", 2e-06, 6e-06},
		{"bedrock/us.anthropic.claude-3-5-haiku-20241022-v1:0", "us.anthropic.claude-3-5-haiku-20241022-v1:0", 8e-07, 4e-06},
		{"voyage/voyage-3", "voyage/voyage-3", 6e-08, 0},
		{"ollama/llama3:8b", "ollama/llama3", 0, 0}, // zero costs are prices
		{"my-fine-tune", "My-Fine-Tune", 3e-07, 0},  // null counts as 0
		{"claude-opus-4-20250514", "claude-opus-4", 1.6e-05, 8e-05},
		// skipped entries
		{"sample_spec", "", 0, 0},
		{"gpt-image-1", "", 0, 0},
		{"whisper-1", "", 0, 0},
		{"1024-x-1024/dall-e-2", "", 0, 0},
		{"cohere/rerank-english-v3.0", "", 0, 0},
	}
	for _, c := range cases {
		family, p, ok := tab.Lookup(c.model)
		want := Price{c.in, c.out}
		if family != c.family || ok != (c.family != "") || p != want {
			t.Errorf("Lookup(%q) = %q, %+v, %v; want %q, %+v", c.model, family, p, ok, c.family, want)
		}
	}
	if got, want := tab.Families(), Default().Families(); !slices.Equal(got, want) {
		t.Errorf("Families() after Load = %v, want the built-in %v", got, want)
	}
	if got := tab.Label("azure/gpt-4o"); got != "azure/gpt-4o" {
		t.Errorf(`Label("azure/gpt-4o") = %q`, got)
	}
	// Load leaves the built-in table alone.
	if _, p, _ := Default().Lookup("gpt-4o"); p != (Price{2.5e-06, 1e-05}) {
		t.Errorf("Default() gpt-4o = %+v after Load", p)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, path string
		mention    []string
	}{
		{"missing", filepath.Join(dir, "nope.json"), []string{"nope.json", "no such file"}},
		{"directory", dir, []string{"is a directory"}},
		{"empty", write("empty.json", ""), []string{"JSON object"}},
		{"array", write("array.json", `[{"gpt-4o": {}}]`), []string{"JSON object"}},
		{"truncated", write("trunc.json", "{\n  \"a\": {\"input_cost_per_token\": 1e-6"), []string{"malformed JSON", "line 2"}},
		{"trailing", write("trailing.json", `{"a": {}} x`), []string{"malformed JSON"}},
		{"negative", write("neg.json", `{"gpt-x": {"input_cost_per_token": -1e-06, "output_cost_per_token": 0}}`), []string{`"gpt-x"`, "input_cost_per_token", "-1e-06"}},
		{"string", write("str.json", `{"gpt-x": {"input_cost_per_token": "0.1"}}`), []string{`"gpt-x"`, "input_cost_per_token", `"0.1"`}},
		{"bool", write("bool.json", `{"gpt-x": {"output_cost_per_token": true}}`), []string{`"gpt-x"`, "output_cost_per_token"}},
		{"object", write("obj.json", `{"gpt-x": {"output_cost_per_token": {"tier": 1}}}`), []string{`"gpt-x"`, "output_cost_per_token"}},
		{"overflow", write("big.json", `{"gpt-x": {"output_cost_per_token": 1e400}}`), []string{`"gpt-x"`, "output_cost_per_token"}},
		{"entry array", write("entry.json", `{"gpt-x": [1, 2]}`), []string{`"gpt-x"`, "JSON object"}},
		{"entry null", write("null.json", `{"gpt-x": null}`), []string{`"gpt-x"`, "JSON object"}},
		{"empty name", write("noname.json", `{"": {"input_cost_per_token": 1e-06}}`), []string{"empty"}},
		{"newline in name", write("nl.json", `{"a\nb": {"input_cost_per_token": -1}}`), []string{`"a\nb"`}},
	}
	for _, c := range cases {
		tab, err := Load(c.path)
		var ce *envconf.Error
		if tab != nil || !errors.As(err, &ce) || ce.Var != "MODEL_PRICES_FILE" {
			t.Errorf("%s: Load = %v, %v; want an *envconf.Error for MODEL_PRICES_FILE", c.name, tab, err)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "MODEL_PRICES_FILE: ") || strings.ContainsAny(msg, "\r\n") {
			t.Errorf("%s: %q is not one line naming MODEL_PRICES_FILE", c.name, msg)
		}
		for _, m := range c.mention {
			if !strings.Contains(msg, m) {
				t.Errorf("%s: %q does not mention %q", c.name, msg, m)
			}
		}
	}
}

// The embedded table parses, every entry says where its price comes from and
// when, and every built-in family prices itself and its variants.
func TestEmbeddedTable(t *testing.T) {
	var raw map[string]map[string]any
	if err := json.Unmarshal(builtinJSON, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw) < 50 {
		t.Errorf("only %d built-in models", len(raw))
	}
	asOf := regexp.MustCompile(`^20[0-9]{2}-(0[1-9]|1[0-2])$`)
	for name, e := range raw {
		if name != strings.ToLower(name) {
			t.Errorf("%s: keys are lower-case, as LiteLLM's", name)
		}
		for _, k := range []string{"input_cost_per_token", "output_cost_per_token"} {
			if v, ok := e[k].(float64); !ok || v < 0 || v > 1e-3 {
				t.Errorf("%s: %s = %v, want a non-negative USD-per-token number", name, k, e[k])
			}
		}
		if s, _ := e["source"].(string); !strings.HasPrefix(s, "https://") {
			t.Errorf("%s: source %q is not a pricing page URL", name, s)
		}
		if s, _ := e["as_of"].(string); !asOf.MatchString(s) {
			t.Errorf("%s: as_of %q is not YYYY-MM", name, s)
		}
		if s, _ := e["litellm_provider"].(string); s == "" {
			t.Errorf("%s: no litellm_provider", name)
		}
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	tab := Default()
	if got := tab.Families(); !slices.Equal(got, names) {
		t.Errorf("Families() = %v, want the table's keys %v", got, names)
	}
	for _, name := range names {
		for _, variant := range []string{name, name + "-20990101", name + "-latest", "openai/" + name, name + "@001"} {
			if family, _, _ := tab.Lookup(variant); family != name {
				t.Errorf("Lookup(%q) = %q, want %q", variant, family, name)
			}
		}
	}
	// Families is the caller's copy.
	f := tab.Families()
	f[0] = "mutated"
	if tab.Families()[0] == "mutated" {
		t.Error("Families() shares its slice")
	}
}

func TestLookupAllocs(t *testing.T) {
	tab := Default()
	for _, m := range []string{"bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0", "no-such-model-v1"} {
		if n := testing.AllocsPerRun(100, func() { tab.Lookup(m) }); n != 0 {
			t.Errorf("Lookup(%q) allocates %v times", m, n)
		}
	}
}

func TestConcurrentLookups(t *testing.T) {
	tab, err := Load(filepath.Join("testdata", "litellm_sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				m := []string{"gpt-4o-mini-2024-07-18", "azure/gpt-4o", "unknown", "claude-opus-4-5"}[(g+i)%4]
				tab.Cost(m, 10, 10)
				Default().Label(m)
			}
		})
	}
	wg.Wait()
}

// bigTable is a LiteLLM-sized table: the built-ins plus 2,500 generated keys
// in LiteLLM's shapes (provider-prefixed, dated, Bedrock-style).
func bigTable(tb testing.TB) *Table {
	tb.Helper()
	entries := map[string]map[string]any{}
	for i := range 2500 {
		var name string
		switch i % 5 {
		case 0:
			name = fmt.Sprintf("provider%d/model-%d", i%40, i)
		case 1:
			name = fmt.Sprintf("model-%d-2025-%02d-01", i, i%12+1)
		case 2:
			name = fmt.Sprintf("us.vendor%d.model-%d-v1:0", i%7, i)
		case 3:
			name = fmt.Sprintf("azure/eu/gpt-4o-%d", i)
		default:
			name = fmt.Sprintf("vertex_ai/claude-x-%d@2025", i)
		}
		entries[name] = map[string]any{"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06, "litellm_provider": "x"}
	}
	data, err := json.Marshal(entries)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "big.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	tab, err := Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	if len(tab.byKey) < 2500 {
		tb.Fatalf("table has %d keys", len(tab.byKey))
	}
	return tab
}

func TestBigTable(t *testing.T) {
	tab := bigTable(t)
	for model, want := range map[string]string{
		"gpt-4o-mini-2024-07-18":        "gpt-4o-mini",
		"provider0/model-1000-20250101": "provider0/model-1000",
		"provider3/model-1000-20250101": "",
		"model-1001-2025-06-01":         "model-1001-2025-06-01",
		"azure/eu/gpt-4o-1003":          "azure/eu/gpt-4o-1003",
		"unknown-model":                 "",
	} {
		if got, _, _ := tab.Lookup(model); got != want {
			t.Errorf("Lookup(%q) = %q, want %q", model, got, want)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	tab := bigTable(b)
	for _, m := range []string{
		"gpt-4o-mini",
		"claude-3-5-sonnet-20241022",
		"bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0",
		"Some-Unknown-Model-Name-2025-01-01",
	} {
		b.Run(m, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tab.Lookup(m)
			}
		})
	}
}
