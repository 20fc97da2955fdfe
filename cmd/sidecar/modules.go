package main

import (
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/metrics"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// modules is the product: every module the sidecar can run, in the order
// their routes are registered. SIDECAR_MODULES enables a subset by name.
// Adding a module is one line here and a package of its own.
var modules = []sidecar.Factory{
	sessions.Factory,
	ttl.Factory,
	usage.Factory,
	locks.Factory,
	metrics.Factory,
}
