// Command sidecar is the session sidecar for AI agents: agent pods call it on
// localhost to keep conversation memory, TTLs and locks in Redis, and it tells
// Prometheus what the agents spend. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		version, revision := sidecar.BuildVersion()
		fmt.Printf("sidecar %s (revision %s, %s)\n", version, revision, runtime.Version())
		return
	}
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "sidecar takes no arguments (configuration is environment variables; see README.md), only --version")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx, envconf.FromOS(), os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sidecar:", err)
		os.Exit(1)
	}
}
