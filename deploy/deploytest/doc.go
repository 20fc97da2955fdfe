// Package deploytest holds the tests of the monitoring files under deploy/:
// the Prometheus scrape config and alerting rules (deploy/prometheus/) and
// the Grafana dashboard and provisioning (deploy/grafana/). They check the
// files with promtool, lint a live /metrics, and run every dashboard and
// rule expression through a real Prometheus (Debian's prometheus) scraping
// two real sidecars. It has no code besides its tests.
//
// Files (the package's subject, beside this doc.go):
//   - deploy/prometheus/prometheus.yml: the scrape config (a static
//     agent-sidecar job setting namespace and pod; a commented Kubernetes
//     pod-discovery job), loading the rules below.
//   - deploy/prometheus/rules.yml, deploy/prometheus/rules_test.yml: the
//     alerting rules (global gauges taken with max) and their promtool unit
//     tests.
//   - deploy/grafana/agentsidecar.json: the dashboard (DS_PROMETHEUS input,
//     namespace and pod variables).
//   - deploy/grafana/provisioning/: Grafana's data source and dashboard
//     provider.
//
// Tests: deploy_test.go runs promtool check config, check rules and test
// rules, lints a live sidecar's /metrics, and queries every dashboard, rule
// and docs/metrics.md expression on a real Prometheus (totals checked
// against /v1/sessions/stats); assets_test.go checks the dashboard's shape,
// the provisioning files, and that rules take Redis-derived gauges with
// max, never sum.
package deploytest
