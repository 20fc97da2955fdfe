package tokens

import "unicode"

// PerMessage is the overhead a chat message carries beside its text (role,
// separators), added to a message's estimate.
const PerMessage = 4

// Estimate is the token estimate of the texts taken together:
// ceil(max(chars/4, words*1.3)). It is 0 for no text.
func Estimate(texts ...string) int {
	var sum Counts
	for _, s := range texts {
		c := Count(s)
		sum.Chars += c.Chars
		sum.Words += c.Words
	}
	return sum.Tokens()
}

// Message is the estimate of one message whose text is texts: Estimate plus
// PerMessage.
func Message(texts ...string) int {
	return Estimate(texts...) + PerMessage
}

// Counts are what Estimate counts in a text, kept beside a text that grows
// by appends (a context block) so the estimate of the whole follows from
// the counts of its parts without reading the text again: a Redis script
// appending to a block combines the stored counts with those of the new
// piece exactly as Append does, and Tokens applies the rule.
type Counts struct {
	Bytes int  // UTF-8 bytes
	Chars int  // code points
	Words int  // runs of non-whitespace
	Lead  bool // the text starts with a non-whitespace character
	Trail bool // the text ends with a non-whitespace character
}

// Count counts s as Estimate does.
func Count(s string) Counts {
	c := Counts{Bytes: len(s)}
	inWord := false
	for _, r := range s {
		c.Chars++
		if unicode.IsSpace(r) {
			inWord = false
		} else {
			if !inWord {
				c.Words++
				if c.Chars == 1 {
					c.Lead = true
				}
			}
			inWord = true
		}
	}
	c.Trail = inWord
	return c
}

// Append returns the counts of the concatenation of the texts counted by
// c and d: a word split across the seam counts once.
func (c Counts) Append(d Counts) Counts {
	if c.Chars == 0 {
		return d
	}
	if d.Chars == 0 {
		return c
	}
	out := Counts{Bytes: c.Bytes + d.Bytes, Chars: c.Chars + d.Chars, Words: c.Words + d.Words, Lead: c.Lead, Trail: d.Trail}
	if c.Trail && d.Lead {
		out.Words--
	}
	return out
}

// Tokens is the estimate of the counted text: Estimate's rule.
func (c Counts) Tokens() int {
	return max((c.Chars+3)/4, (c.Words*13+9)/10)
}
