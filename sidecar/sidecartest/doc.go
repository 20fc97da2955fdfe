// Package sidecartest runs a real sidecar host on loopback ports against a
// real Redis (from redisstoretest) for module tests, and talks HTTP to it:
// Do and Metrics from the test's goroutine, a Client from any. With
// redisstoretest.Setup it runs from a TestMain too. It is the one way tests
// start a host.
//
// Files:
//   - sidecartest.go: Host (Start, StartURL, Stop, Exited, Do, Metrics),
//     Reply, Do, and Client (NewClient, Send, WaitServing) for other
//     goroutines.
//   - stream.go: Host.Stream, reading a streaming answer (Server-Sent
//     Events) until a condition holds.
//
// Tests: none of its own; every module's tests use it.
package sidecartest
