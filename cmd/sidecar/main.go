// Command sidecar is the session sidecar for AI agents: agent pods call it on
// localhost to keep conversation memory, TTLs and locks in Redis, and it tells
// Prometheus what the agents spend. See README.md.
//
// The product is the list in modules/modules.go; the process (configuration
// → logger → Redis → modules → serve, signals, exit codes) is sidecar.Main.
package main

import (
	"os"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

func main() { os.Exit(sidecar.Main(modules.All())) }
