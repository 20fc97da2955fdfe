package main

import (
	"os"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/examples/hello"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

func main() { os.Exit(sidecar.Main(append(modules.All(), hello.Factory))) }
