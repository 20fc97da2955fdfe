package main

import (
	"os"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

func main() { os.Exit(sidecar.Main(modules.All())) }
