package kubernetes

import (
	"flag"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite base/grafana-dashboard.yaml from deploy/grafana/agentsidecar.json")

// The dashboard ConfigMap carries deploy/grafana/agentsidecar.json exactly
// (labelled for Grafana's dashboard sidecar, as kube-prometheus-stack
// runs it). Regenerate with: go test ./deploy/kubernetes -run Dashboard -update
func TestDashboardConfigMapMatchesTheDashboard(t *testing.T) {
	dash, err := os.ReadFile("../grafana/agentsidecar.json")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		var b strings.Builder
		b.WriteString("# Generated from deploy/grafana/agentsidecar.json by\n")
		b.WriteString("#   go test ./deploy/kubernetes -run Dashboard -update\n")
		b.WriteString("# Grafana's dashboard sidecar (kube-prometheus-stack) loads ConfigMaps\n")
		b.WriteString("# labelled grafana_dashboard: \"1\".\n")
		b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: agent-sidecar-dashboard\n")
		b.WriteString("  labels:\n    app.kubernetes.io/name: agent-sidecar\n    grafana_dashboard: \"1\"\n")
		b.WriteString("data:\n  agentsidecar.json: |\n")
		for _, line := range strings.Split(strings.TrimRight(string(dash), "\n"), "\n") {
			b.WriteString("    " + line + "\n")
		}
		if err := os.WriteFile("base/grafana-dashboard.yaml", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile("base/grafana-dashboard.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Metadata.Labels["grafana_dashboard"] != "1" {
		t.Error("the ConfigMap lacks the grafana_dashboard label")
	}
	if strings.TrimRight(cm.Data["agentsidecar.json"], "\n") != strings.TrimRight(string(dash), "\n") {
		t.Fatal("base/grafana-dashboard.yaml differs from deploy/grafana/agentsidecar.json; run go test ./deploy/kubernetes -run Dashboard -update")
	}
}
