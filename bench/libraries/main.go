// Command libraries writes the sidecar's Redis Functions libraries (the
// stock scripts, one library per prelude chain, as the sidecar loads them)
// to a directory, one NAME.lua per library, for the benchmarks in bench/
// and for loading them by hand (redis-cli -x FUNCTION LOAD REPLACE < file).
//
//	go run ./bench/libraries DIR
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentsidecar/agentsidecar/lua"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/libraries DIR")
		os.Exit(2)
	}
	for _, lib := range lua.Libraries() {
		if err := os.WriteFile(filepath.Join(os.Args[1], lib.Name+".lua"), []byte(lib.Source), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(lib.Name)
	}
}
