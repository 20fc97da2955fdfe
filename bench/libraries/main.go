package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/lua"
)

// every stock module, linked: their scripts and families register at init
var _ = modules.All

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/libraries DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	if err := os.MkdirAll(filepath.Join(dir, "eval"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, s := range lua.All() {
		if err := os.WriteFile(filepath.Join(dir, "eval", s.Name+".lua"), []byte(s.Source()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for _, lib := range lua.Libraries() {
		if err := os.WriteFile(filepath.Join(dir, lib.Name+".lua"), []byte(lib.Source), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(lib.Name)
	}
}
