// Package openapi holds the OpenAPI 3.1 description of the sidecar's whole
// /v1 API (openapi.json), served by the ops listener at GET /openapi.json.
//
// The document is written by hand. Tests keep it honest: every (method,
// path) it lists is a route some module registers and the other way round
// (cmd/sidecar), and its request examples run against a live sidecar, whose
// answers must match the documented schemas.
package openapi

import _ "embed"

//go:embed openapi.json
var document []byte

// JSON returns the OpenAPI document. Callers must not modify it.
func JSON() []byte { return document }
