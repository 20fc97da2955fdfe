package search

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kljensen/snowball/english"
)

func TestQueryFoldsAndStems(t *testing.T) {
	for _, c := range []struct{ q, want string }{
		{"Deployment", "deploy"},
		{"deployed DEPLOYING deploys", "deploy"},
		{"Café résumé", "cafe resum"},
		{"the and of", ""},
		{"naïve Ünïcödé 東京", "naiv unicod 東京"},
		{"x" + strings.Repeat("y", 70) + " ok", "ok"},
	} {
		if got := strings.Join(Query(c.q), " "); got != c.want {
			t.Errorf("Query(%q) = %q, want %q", c.q, got, c.want)
		}
	}
}

func TestAnalyze(t *testing.T) {
	d := Analyze("We deployed the deployment.", "Deploy quickly!")
	if d.Terms["deploy"] != 3 || d.Terms["quick"] != 1 || d.Length != 4 {
		t.Fatalf("Analyze: %+v", d)
	}
	if got := d.Spec(); got != "deploy 3 quick 1" {
		t.Fatalf("Spec: %q", got)
	}
	var many []string
	for i := range 400 {
		many = append(many, "w"+strings.Repeat("a", i%50)+string(rune('a'+i/50)))
	}
	if got := len(Analyze(strings.Join(many, " ")).Terms); got != MaxDocTerms {
		t.Fatalf("terms kept: %d, want %d", got, MaxDocTerms)
	}
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("filler ", 60) + "the deployment failed " + strings.Repeat("more ", 60)
	s := Snippet(long, Query("deploy"))
	if len([]rune(s)) != SnippetRunes || !strings.Contains(s, "deployment failed") {
		t.Fatalf("snippet %q", s)
	}
	if got := Snippet("short text", Query("deploy")); got != "short text" {
		t.Fatalf("short: %q", got)
	}
}

func TestScore(t *testing.T) {
	// a rarer term weighs more; a shorter document with the same tf scores higher
	rare := Score([]int{1}, []int{2}, 100, 10, 10)
	common := Score([]int{1}, []int{80}, 100, 10, 10)
	short := Score([]int{1}, []int{2}, 100, 5, 10)
	if !(rare > common && short > rare && common > 0) {
		t.Fatalf("rare %f common %f short %f", rare, common, short)
	}
}

// The stem cache answers what the stemmer does, across its generations.
func TestStemCache(t *testing.T) {
	for round := range 3 {
		for i := range StemCacheWords + 100 {
			w := fmt.Sprintf("deploying%d", i%(StemCacheWords/2+round))
			if got, want := term(w), english.Stem(w, false); got != want {
				t.Fatalf("term(%q) = %q, want %q", w, got, want)
			}
		}
	}
	for _, w := range []string{"deployment", "deployed", "running", "café"} {
		if got, want := term(w), english.Stem(w, false); got != want {
			t.Fatalf("term(%q) = %q, want %q", w, got, want)
		}
	}
	if n := len(stems.cur); n > StemCacheWords {
		t.Fatalf("cache holds %d words, want at most %d", n, StemCacheWords)
	}
}

// BenchmarkAnalyze: a typical Q&A entry's question, context and answer (38
// words) analysed for the index (BENCHMARKS.md, "Q&A entries in the
// relevance index").
func BenchmarkAnalyze(b *testing.B) {
	for b.Loop() {
		Analyze("What did the quarterly report say about revenue growth in the EMEA region?",
			"Q3 report, section 4.2: EMEA revenue grew 12% year over year, driven by the DACH markets and new enterprise contracts in the Nordics.",
			"EMEA revenue grew 12% year over year in Q3, mostly from DACH and new Nordic enterprise contracts.")
	}
}
