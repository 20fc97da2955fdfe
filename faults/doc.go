// Package faults holds the sidecar's fault-injection and linearizability
// tests. It has no product code: every test starts real redis-server
// processes (redisstoretest.NewReal) and a real host with the product's
// modules (sidecartest), then kills, restarts, slows or pauses Redis, or
// hangs up mid-request, and checks what the API promised against what is in
// Redis. The linearizability tests record concurrent histories of lock and
// session calls and check them with porcupine. docs/testing.md says what
// each test proves, its numbers, and how to run it.
//
// Files: this doc.go; the package is its tests.
//
// Tests: outage_test.go kills redis-server under a mixed load (503 fast,
// never 500, recovery, no goroutine left); aof_test.go kills an
// appendfsync-always server mid-load (no acknowledged append lost, none
// half-written); slow_test.go blocks Redis with DEBUG SLEEP (503 at the
// deadline) and pauses it while callers hang up (each write whole or
// absent); linearizability_test.go checks lock and session histories
// against their models, and that the models reject violations;
// helpers_test.go holds the shared host start and the stored-session
// checks.
package faults
