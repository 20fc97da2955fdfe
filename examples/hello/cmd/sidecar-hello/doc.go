// Command sidecar-hello is the sidecar with one module more: the stock list
// plus examples/hello, built without forking the sidecar (as xcaddy builds
// Caddy with a plugin).
//
// Files:
//   - main.go: sidecar.Main(append(modules.All(), hello.Factory)).
//
// Tests: examples/hello/hello_test.go builds and runs it.
package main
