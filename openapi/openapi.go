package openapi

import _ "embed"

//go:embed openapi.json
var document []byte

// JSON returns the OpenAPI document. Callers must not modify it.
func JSON() []byte { return document }
