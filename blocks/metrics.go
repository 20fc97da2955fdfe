package blocks

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// mcpMethods are the values of the method label: the MCP methods a
// client calls, every notification as one, "invalid" for a body that is
// no request the SDK takes, "other" for any other method.
var mcpMethods = []string{"initialize", "server/discover", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/templates/list", "resources/read", "notification", "invalid", "other"}

// toolOutcomes are the values of the outcome label of a known tool's
// call: a result, a result with isError (the model's mistake, nothing
// written), or the sidecar's failure (answered as an HTTP error).
var toolOutcomes = []string{"ok", "is_error", "failed"}

// metrics are the module's counters of its MCP server.
type metrics struct {
	requests *prometheus.CounterVec
	calls    *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_mcp_requests_total",
			Help: "MCP requests and notifications received by the sessions' MCP servers, by method and outcome (ok, or error: a JSON-RPC error or a failed request).",
		}, []string{"method", "outcome"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidecar_mcp_tool_calls_total",
			Help: "MCP tools/call requests by tool and outcome: ok, is_error (the model's mistake, nothing written), failed (the sidecar's error), unknown_tool (tool other).",
		}, []string{"tool", "outcome"}),
	}
	for _, method := range mcpMethods {
		for _, outcome := range []string{"ok", "error"} {
			m.requests.WithLabelValues(method, outcome)
		}
	}
	for _, t := range tools {
		for _, o := range toolOutcomes {
			m.calls.WithLabelValues(t.name, o)
		}
	}
	m.calls.WithLabelValues("other", "unknown_tool")
	return m
}

func (m *metrics) request(method string, ok bool) {
	switch {
	case strings.HasPrefix(method, "notifications/"):
		method = "notification"
	case !knownMethod(method):
		method = "other"
	}
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	m.requests.WithLabelValues(method, outcome).Inc()
}

func knownMethod(method string) bool {
	for _, m := range mcpMethods {
		if m == method {
			return true
		}
	}
	return false
}

func (m *metrics) call(tool, outcome string) { m.calls.WithLabelValues(tool, outcome).Inc() }

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.calls}
}
