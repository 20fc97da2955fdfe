// Package compose holds the example agent of the docker compose stack; its
// test validates docker-compose.yml.
package compose

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// docker-compose config validates the file (no Docker engine needed), and
// every file the stack mounts exists.
func TestComposeFileIsValid(t *testing.T) {
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("docker-compose is not installed (apt-get install docker-compose)")
		}
		t.Skip("docker-compose not installed")
	}
	cmd := exec.Command(bin, "-f", "../../docker-compose.yml", "config", "-q")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
}

func TestComposeMountsExist(t *testing.T) {
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Volumes     []string          `yaml:"volumes"`
			NetworkMode string            `yaml:"network_mode"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"redis", "sidecar", "agent", "prometheus", "grafana"} {
		if _, ok := doc.Services[name]; !ok {
			t.Errorf("no %s service", name)
		}
	}
	for name, s := range doc.Services {
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, "./") {
				if _, err := os.Stat("../../" + src); err != nil {
					t.Errorf("%s mounts %s, which does not exist", name, src)
				}
			}
		}
	}
	// The agent shares the sidecar's network, so the sidecar's default
	// loopback API address reaches it.
	if doc.Services["agent"].NetworkMode != "service:sidecar" || doc.Services["agent"].Environment["SIDECAR_URL"] != "http://127.0.0.1:7480" {
		t.Errorf("agent: %+v", doc.Services["agent"])
	}
}
