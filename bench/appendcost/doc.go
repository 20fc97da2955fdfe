// Command appendcost measures what an append costs the shared Redis: the CPU
// redis-server spends per Q&A entry appended through the sidecar (POST
// .../entries, one script) against Cognee's own append (RPUSH then EXPIRE,
// each its own round trip, as Cognee's Redis adapter sends them), in one run
// on one redis-server, at 1 and 16 concurrent clients, on one hot session
// and spread over 1 000 sessions. Redis's CPU is read from /proc (user +
// system time of the redis-server process), so everything Redis does for an
// append counts: reading the request, the script and its commands, the
// reply. Phases alternate (Cognee, sidecar, Cognee, sidecar, ...) so a
// machine whose load drifts moves both.
//
//	go run ./bench/appendcost                  # 4 s per phase, 2 rounds
//	go run ./bench/appendcost -d 8s -rounds 3
//
// It builds ./cmd/sidecar and starts it and a redis-server on free loopback
// ports (bench/rig/) with the product's default settings (SESSION_EVENTS=watched, with
// nobody watching; SEARCH_INDEX=on-demand, for users who never searched),
// and stops both at the end.
//
// Files:
//   - main.go: the phases (Cognee and sidecar alternating), the two
//     appenders, redis-server CPU from /proc.
//
// Tests: none; a benchmark run by hand.
package main
