package events

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// metrics of one module (one host).
type metrics struct {
	subscribers prometheus.Gauge
	sent        prometheus.Counter
	dropped     prometheus.Counter
	reads       prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		subscribers: sidecar.NewGauge("sidecar_events_subscribers", "Event streams (GET .../events) this sidecar is serving now."),
		sent:        sidecar.NewCounter("sidecar_events_sent_total", "Events this sidecar wrote to its event streams (replayed and live; reconnected markers not counted)."),
		dropped:     sidecar.NewCounter("sidecar_events_dropped_total", "Event streams ended because their client fell more than 1000 events behind (it reconnects with Last-Event-ID)."),
		reads:       sidecar.NewCounter("sidecar_events_stream_reads_total", "Reads of watched Redis streams by this sidecar's one reader (woken by Pub/Sub, or at each heartbeat)."),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.subscribers, m.sent, m.dropped, m.reads}
}
