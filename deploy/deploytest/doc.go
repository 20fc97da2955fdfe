// Package deploytest holds the tests of the monitoring files under deploy/:
// the Prometheus scrape config and alerting rules (deploy/prometheus/) and
// the Grafana dashboard and provisioning (deploy/grafana/). They check the
// files with promtool, lint a live /metrics, and run every dashboard and rule
// expression through a real Prometheus scraping a real sidecar. It has no
// code besides its tests.
package deploytest
