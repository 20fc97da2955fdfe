// Command slowuploads measures whether slow uploads lock new clients out of
// a running sidecar (BENCHMARKS.md, "Slow uploads"): it opens -conns
// connections that each send a message append's headers and then its body at
// one byte every -every, waits -settle, then times -clients appends of a new
// client, one after another, each on a new connection.
//
//	go run ./bench/slowuploads -api 127.0.0.1:7480 -conns 1600
//
// Files:
//   - main.go: the trickling connections and the timed appends.
//
// Tests: none; a benchmark run by hand.
package main
