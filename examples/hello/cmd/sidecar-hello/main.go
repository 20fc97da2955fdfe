// Command sidecar-hello is the sidecar with one module more: the stock list
// plus examples/hello, built without forking the sidecar (as xcaddy builds
// Caddy with a plugin).
package main

import (
	"os"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/examples/hello"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

func main() { os.Exit(sidecar.Main(append(modules.All(), hello.Factory))) }
