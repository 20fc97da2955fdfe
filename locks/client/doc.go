// Package client is the former Go client of the sidecar's locks API.
//
// Deprecated: use github.com/agentsidecar/agentsidecar/client, which covers
// the whole API and holds the same Lease. Every name here is an alias of
// its counterpart there (Options is client.LeaseOptions, APIError is
// client.Error), so code using this package keeps compiling and behaving
// the same.
//
// Files:
//   - client.go: the aliases (Client, Option, Options, Lease, APIError, the
//     Err sentinels, New, WithHTTPClient, WithBearerToken).
//
// Tests: client_test.go compiles and runs code written against the old
// names (an Example and TestDeprecatedNames) on a live host.
package client
