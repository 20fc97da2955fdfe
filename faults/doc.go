// Package faults holds the sidecar's fault-injection and linearizability
// tests. It has no product code: every test starts real
// redis-server processes (redisstoretest.NewReal) and a real host with the
// product's modules (sidecartest), then kills, restarts, slows or pauses
// Redis, or hangs up mid-request, and checks what the API promised against
// what is in Redis. The linearizability tests record concurrent histories
// of lock and session calls and check them with porcupine.
//
// docs/testing.md says what each test proves and how to run it.
package faults
