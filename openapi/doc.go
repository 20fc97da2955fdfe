// Package openapi holds the OpenAPI 3.1 description of the sidecar's whole
// /v1 API (openapi.json), embedded and served by the ops listener at
// GET /openapi.json; the clients' types are generated from it.
//
// The document is written by hand: add an operation with its route. Tests
// keep it honest: every (method, path) it lists is a route some module
// registers and the other way round, each route's query parameters are the
// documented ones, and its examples run against a live sidecar whose
// answers must match the documented schemas, also through Stoplight Prism
// (all in cmd/sidecar).
//
// Files:
//   - openapi.go: JSON, the embedded document.
//   - openapi.json: the document.
//   - prism/package.json, prism/package-lock.json, prism/.gitignore:
//     Stoplight Prism pinned for cmd/sidecar/prism_test.go (npm ci --prefix
//     openapi/prism).
//   - openapitest/: reading the document in tests (its own package).
//
// Tests: openapi_test.go checks the document alone: path parameters,
// the shared error answers on every operation, every example valid for its
// schema, and a validator that refuses what it should.
package openapi
