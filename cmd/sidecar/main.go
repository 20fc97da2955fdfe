// Command sidecar is the session sidecar for AI agents: agent pods call it on
// localhost to keep conversation memory, TTLs and locks in Redis, and it tells
// Prometheus what the agents spend. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentsidecar/agentsidecar/envconf"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	err := run(ctx, envconf.FromOS(), os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sidecar:", err)
		os.Exit(1)
	}
}
