// Command sidecar-bench drives a running sidecar over HTTP with a mix of
// session, usage and lock calls, performs the same operations straight
// against the same Redis (the sidecar's own store and Lua scripts, over
// rueidis: the same work minus HTTP), and prints throughput, HDR latency
// percentiles, the ratio sidecar/direct and the latency the sidecar adds.
// With -spawn it starts its own redis-server and sidecar on free loopback
// ports and also reports the sidecar's RSS, CPU per request and startup
// time. Results and how to read them: BENCHMARKS.md, "Load tool".
//
//	go run ./cmd/sidecar-bench -spawn -d 5s                  # closed loop, max throughput
//	go run ./cmd/sidecar-bench -spawn -rate 1000 -d 5s       # open loop at 1000 req/s
//	go run ./cmd/sidecar-bench -sidecar http://127.0.0.1:7480 -redis redis://127.0.0.1:6379/0
//
// Files:
//   - main.go: flags (parseFlags, the help text) and main.
//   - run.go: a run: spawn or connect, the phases (direct and over HTTP),
//     the RPUSH baseline, cleanup.
//   - spawn.go: child processes: redis-server and a freshly built sidecar on
//     free ports, readiness, RSS from /proc.
//   - ops.go: the operations, the mix (-mix) and the workers.
//   - load.go: closed- and open-loop load, HDR histograms, progress.
//   - direct.go: the direct target (the store and scripts on Redis).
//   - httptarget.go: the HTTP target (the raw client, or net/http).
//   - rawhttp.go: a minimal HTTP/1.1 client with keep-alive.
//   - report.go: the tables, the comparison and the targets' verdicts.
//   - term_linux.go, term_other.go: whether stdout is a terminal.
//
// Tests: main_test.go runs a short spawned run and checks the help and bad
// flags, the mix; rawhttp_test.go the raw client; bench_test.go the mix as
// Go benchmarks. They say nothing about speed.
package main
