// Package tokens is the sidecar's one token estimator, used wherever a
// count is needed and the caller gave none: messages (Message: Estimate plus
// PerMessage) and context blocks (Count, Estimate).
//
// The rule is ceil(max(chars / 4, words × 1.3)), where chars counts Unicode
// code points (an invalid byte counts as one) and words counts runs of
// non-whitespace: the larger of the two common rules of thumb, so prose,
// code and CJK text are not badly under-counted. Counts keep what the rule
// needs beside a text that grows by appends (a block), so the estimate of
// the whole follows from its parts' counts; the blocks scripts combine them
// in Lua exactly as Counts.Append does. (Usage posts keep Cognee's own rule,
// len(text) // 4: usage.EstimateTokens.)
//
// Files:
//   - tokens.go: Estimate, Message, PerMessage, Counts (Count, Append,
//     Tokens).
//
// Tests: tokens_test.go checks the rule (words or characters winning, code
// points not bytes, texts taken together), Message, and that appended
// counts equal the counts of the whole.
package tokens
