package tokens

import (
	"strings"
	"testing"
)

func TestEstimate(t *testing.T) {
	tests := []struct {
		name  string
		texts []string
		want  int
	}{
		{"empty", nil, 0},
		{"empty string", []string{""}, 0},
		{"one short word: words win", []string{"hi"}, 2},              // chars 2 -> 1, words 1 -> 1.3 -> 2
		{"long word: chars win", []string{"internationalization"}, 5}, // 20 chars -> 5
		{"prose", []string{"the quick brown fox jumps"}, 7},           // 25 chars -> 7 (6.25), 5 words -> 6.5 -> 7
		{"ten words", []string{"a b c d e f g h i j"}, 13},            // 19 chars -> 5, 10 words -> 13 exactly
		{"code points, not bytes", []string{"日本語のテキスト"}, 2},           // 8 code points -> 2, 1 word -> 2
		{"whitespace runs", []string{"  a \t\n b  "}, 3},              // 10 chars -> 3, 2 words -> 2.6 -> 3
		{"texts taken together", []string{"abcd", "efgh"}, 3},         // 8 chars -> 2, 2 words -> 2.6 -> 3
		{"exact quarter", []string{strings.Repeat("x", 400)}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Estimate(tt.texts...); got != tt.want {
				t.Errorf("Estimate(%q) = %d, want %d", tt.texts, got, tt.want)
			}
		})
	}
}

func TestMessageAddsPerMessage(t *testing.T) {
	if got, want := Message("hello world"), Estimate("hello world")+4; got != want {
		t.Errorf("Message = %d, want %d", got, want)
	}
	if got := Message(); got != 4 {
		t.Errorf("Message() = %d, want 4", got)
	}
}

// Counts of a concatenation follow from the parts' counts: Append then
// Tokens gives Estimate of the joined text, whatever the seam.
func TestCountsAppend(t *testing.T) {
	parts := []string{"", " ", "a", "ab ", " cd", "日本語", "x\u00a0y", "\u3000z", "word", "  two  words  ", "\n"}
	for _, a := range parts {
		for _, b := range parts {
			for _, c := range parts {
				whole := a + b + c
				got := Count(a).Append(Count(b)).Append(Count(c))
				if want := Count(whole); got != want {
					t.Errorf("Count(%q)+Count(%q)+Count(%q) = %+v, want %+v", a, b, c, got, want)
				}
				if got.Tokens() != Estimate(whole) {
					t.Errorf("Tokens of %q = %d, want Estimate %d", whole, got.Tokens(), Estimate(whole))
				}
			}
		}
	}
}
