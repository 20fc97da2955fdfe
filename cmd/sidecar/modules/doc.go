// Package modules is the product: every module the sidecar ships, in the
// order their routes are registered. The sidecar binary, bench/libraries
// and the tests that run the whole product all take this one list; adding a module is one line here and a package of its own.
// SIDECAR_MODULES enables a subset by name; a build with a module of its
// own appends to All (examples/hello/cmd/sidecar-hello).
//
// Files:
//   - modules.go: All, the stock factories.
//
// Tests: none here; cmd/sidecar's tests run the list whole.
package modules
