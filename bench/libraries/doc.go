// Command libraries writes the sidecar's Redis Functions library (every
// stock script and the libraries they include, as the sidecar loads it) to a
// directory, as NAME.lua (the name it prints: agentsidecar_scripts_ and a
// digest), for the benchmarks in bench/ and for loading it by hand
// (redis-cli -x FUNCTION LOAD REPLACE < file). It also writes
// DIR/eval/SCRIPT.lua, each stock script's text as EVAL runs it (its
// libraries, then its body), for the EVAL benchmarks. It links every stock
// module (modules.All), as the sidecar does: their scripts and key families
// (the generated keys library) are the product's.
//
//	go run ./bench/libraries DIR
//
// Files:
//   - main.go: the whole command (lua.Libraries, lua.All).
//
// Tests: none; a tool of the benchmarks, run by hand.
package main
