package modules

import (
	"github.com/agentsidecar/agentsidecar/adk"
	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/checkpoints"
	"github.com/agentsidecar/agentsidecar/erasure"
	"github.com/agentsidecar/agentsidecar/events"
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/metrics"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// All returns the stock modules (a new slice each call, so a build that
// adds its own can append to it).
func All() []sidecar.Factory {
	return []sidecar.Factory{
		sessions.Factory,
		ttl.Factory,
		usage.Factory,
		registry.Factory,
		messages.Factory,
		blocks.Factory,
		locks.Factory,
		metrics.Factory,
		events.Factory,
		erasure.Factory,
		checkpoints.Factory,
		adk.Factory,
	}
}
