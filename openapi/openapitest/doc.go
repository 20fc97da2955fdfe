// Package openapitest reads the sidecar's OpenAPI document for tests: its
// operations, $ref resolution, and a validator for the JSON Schema subset
// the document uses (a keyword outside the subset is an error, so nothing
// passes unchecked), so tests can check examples and live answers against
// it.
//
// Files:
//   - openapitest.go: Doc (Parse, Operations, Op, Resolve, Deref, Refs,
//     Parameters, Response, Validate, ValidateJSON), Operation, Decode,
//     Normalize, JSONMedia, EventStreamMedia.
//
// Tests: none of its own; openapi/openapi_test.go and
// cmd/sidecar/openapi_test.go use it (TestValidatorRejects checks it refuses).
package openapitest
