// Package tokens is the sidecar's one token estimator, used wherever a
// count is needed and the caller gave none: messages (Estimate + PerMessage)
// and context blocks (Estimate alone).
//
// The rule is ceil(max(chars / 4, words × 1.3)), where chars counts Unicode
// code points (an invalid byte counts as one) and words counts runs of
// non-whitespace: the larger of the two
// common rules of thumb, so prose, code and CJK text are not badly
// under-counted. (Usage posts keep Cognee's own rule, len(text) // 4.)
package tokens

import "unicode"

// PerMessage is the overhead a chat message carries beside its text (role,
// separators), added to a message's estimate.
const PerMessage = 4

// Estimate is the token estimate of the texts taken together:
// ceil(max(chars/4, words*1.3)). It is 0 for no text.
func Estimate(texts ...string) int {
	chars, words := 0, 0
	for _, s := range texts {
		inWord := false
		for _, r := range s {
			chars++
			if unicode.IsSpace(r) {
				inWord = false
			} else if !inWord {
				inWord = true
				words++
			}
		}
	}
	byChars := (chars + 3) / 4     // ceil(chars/4)
	byWords := (words*13 + 9) / 10 // ceil(words*1.3), exact in integers
	return max(byChars, byWords)
}

// Message is the estimate of one message whose text is texts: Estimate plus
// PerMessage.
func Message(texts ...string) int {
	return Estimate(texts...) + PerMessage
}
