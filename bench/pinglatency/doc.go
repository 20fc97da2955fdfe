// Command pinglatency measures what another client of the shared Redis
// waits while the sidecar does its big writes (BENCHMARKS.md, "Big writes:
// bounded, paced steps"): a separate connection sends PING back to back,
// one at a time, timing each round trip, during
//
//   - an idle baseline;
//   - loops of big message appends on fresh sessions (a 1 000-message
//     append, then an 8 MiB one: 32 items of 256 KiB, 16 of 512 KiB, 8 of
//     1 MiB), staged in bounded, paced steps;
//   - a cold relevance search of a session of 20 000 Q&A entries written
//     as Cognee writes them (RPUSH, then EXPIRE), asked again once a second
//     until its index is complete (the search's catch-up, then the
//     background worker's),
//
// and prints each phase's PING p50, p99, p99.9 and max, and the SLOWLOG
// entries (threshold 5 ms) Redis logged in it: how many, the longest and
// its command.
//
//	go run ./bench/pinglatency                 # 5 s per append loop
//	go run ./bench/pinglatency -d 10s -entries 100000
//	go run ./bench/pinglatency -sidecar /tmp/base/sidecar   # another build
//
// It starts a redis-server and the sidecar binary on free loopback ports
// with the product's default settings (bench/rig/), and stops both at the
// end. Times are wall-clock: on a loaded machine they include the time
// Redis or the client was not scheduled (the idle baseline shows it).
//
// Files:
//   - main.go: the phases, the PING client, the SLOWLOG and commandstats
//     reads, the bodies of the appends, Cognee's entries.
//
// Tests: none; a benchmark run by hand.
package main
