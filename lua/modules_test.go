package lua_test

// Every stock module, so the generated keys library (the session families
// packages register) is the product's, as the pinned digests are.
import _ "github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
