// Package metrics is the metrics module (docs/metrics.md): gauges computed
// from Redis at scrape time (sidecar_sessions by status, the all-time usage
// totals, sidecar_sessions_scrape_up and its duration), read through the
// shared session store's Stats. They are global: the same in every pod, so
// aggregate them with max (max without (instance, pod) (sidecar_sessions)),
// never sum. A failed read reports scrape_up 0 rather than stale values.
// The per-process counters live with the code that counts them (host,
// session store, sessions, messages, usage, locks, events, scripts); all are
// served on /metrics. The module serves no /v1 route.
//
// Files:
//   - metrics.go: Factory, the module as a prometheus.Collector.
//
// Tests: metrics_test.go reads the gauges after real writes, reports Redis
// down, and lints the whole registry; main_test.go shares one cluster per
// package (redisstoretest.Main).
package metrics
