// Package cognee is Cognee's wire format: the JSON its Redis adapter writes
// (Python's json.dumps with default settings over pydantic model_dump()),
// the validation rules of its SessionQAEntry and SessionAgentTraceEntry
// models, and the conversion of stored bytes into strict JSON for API
// clients.
//
// Files:
//   - json.go: json.dumps's string escaping (AppendString), Transcode and
//     Strict (stored bytes, NaN and Infinity included, into strict JSON).
//   - entry.go: Q&A entries: NewQAEntry, QAUpdate, FeedbackUpdate,
//     ClearFeedback in model order, FieldError, PythonTime, NewID.
//   - check.go: CheckQAEntry, whether Cognee's model reads a stored entry.
//   - trace.go: NewTrace and context entries (NewContextEntry,
//     ContextPatch).
//   - sanitize.go: Cognee's text limits and value sanitising for traces
//     (TruncateText, SanitizeValue).
//
// Tests: cognee_test.go checks the bytes against Cognee's (golden files and
// fixtures in testdata/, Python reading what Go writes, validation as the
// models); sanitize_test.go the limits and sanitising as Cognee; fuzzers
// in fuzz_test.go and sanitize_test.go.
package cognee
