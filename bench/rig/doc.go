// Package rig is what the Go bench tools share: a redis-server and the real
// sidecar binary (built from ./cmd/sidecar) on free loopback ports, with the
// product's default settings unless told otherwise, and a plain RESP
// connection to that Redis (one command at a time, no client library in
// between).
//
// Files:
//   - rig.go: Start (the two servers), Rig.Stop, Conn (Do, one command a
//     round trip), the port and readiness waits.
//
// Tests: none; the tools that use it are run by hand.
package rig
