// Package kubernetes holds the example manifests; its test checks that they
// parse and agree with the code's defaults.
package kubernetes

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

type container struct {
	Name          string `yaml:"name"`
	RestartPolicy string `yaml:"restartPolicy"`
	Ports         []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	EnvFrom []struct {
		ConfigMapRef struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
	} `yaml:"envFrom"`
	Env []struct {
		Name      string `yaml:"name"`
		ValueFrom struct {
			SecretKeyRef struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	StartupProbe   *probe `yaml:"startupProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	} `yaml:"securityContext"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				InitContainers []container `yaml:"initContainers"`
				Containers     []container `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		PodMetricsEndpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"podMetricsEndpoints"`
	} `yaml:"spec"`
}

func load(t *testing.T) map[string]manifest {
	t.Helper()
	files, _ := filepath.Glob("*.yaml")
	if len(files) < 5 {
		t.Fatalf("found %d manifests", len(files))
	}
	out := map[string]manifest{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var m manifest
			err := dec.Decode(&m)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[m.Kind+"/"+m.Metadata.Name] = m
		}
	}
	return out
}

func TestManifestsMatchTheCode(t *testing.T) {
	ms := load(t)
	cfg, err := sidecar.LoadConfig(envconf.Env{})
	if err != nil {
		t.Fatal(err)
	}
	dep, ok := ms["Deployment/agent"]
	if !ok {
		t.Fatal("no Deployment/agent")
	}
	var sc *container
	for i, c := range dep.Spec.Template.Spec.InitContainers {
		if c.Name == "sidecar" {
			sc = &dep.Spec.Template.Spec.InitContainers[i]
		}
	}
	if sc == nil || sc.RestartPolicy != "Always" {
		t.Fatal("the sidecar is not a native sidecar (initContainers with restartPolicy: Always)")
	}
	if len(sc.Ports) != 1 || sc.Ports[0].Name != "ops" || ":"+strconv.Itoa(sc.Ports[0].ContainerPort) != cfg.OpsAddr {
		t.Fatalf("ops port %+v does not match SIDECAR_OPS_ADDR default %s", sc.Ports, cfg.OpsAddr)
	}
	if sc.SecurityContext.ReadOnlyRootFilesystem == nil || !*sc.SecurityContext.ReadOnlyRootFilesystem ||
		sc.SecurityContext.RunAsNonRoot == nil || !*sc.SecurityContext.RunAsNonRoot ||
		sc.SecurityContext.AllowPrivilegeEscalation == nil || *sc.SecurityContext.AllowPrivilegeEscalation {
		t.Fatalf("sidecar securityContext %+v", sc.SecurityContext)
	}
	if sc.Resources.Requests["cpu"] == "" || sc.Resources.Requests["memory"] == "" || sc.Resources.Limits["memory"] == "" {
		t.Fatalf("sidecar resources %+v", sc.Resources)
	}
	secretOK := false
	for _, e := range sc.Env {
		if e.Name == "CACHE_PASSWORD" && e.ValueFrom.SecretKeyRef.Name != "" {
			secretOK = ms["Secret/"+e.ValueFrom.SecretKeyRef.Name].Kind == "Secret"
		}
	}
	if !secretOK {
		t.Fatal("CACHE_PASSWORD does not come from the Secret")
	}
	if len(sc.EnvFrom) != 1 || ms["ConfigMap/"+sc.EnvFrom[0].ConfigMapRef.Name].Kind != "ConfigMap" {
		t.Fatal("config does not come from the ConfigMap")
	}

	// The probes use the ops port, and their paths answer on a running
	// sidecar's ops listener: liveness on /healthz, readiness on /readyz.
	var paths []string
	for _, p := range []*probe{sc.StartupProbe, sc.LivenessProbe, sc.ReadinessProbe} {
		if p == nil || p.HTTPGet.Port != "ops" {
			t.Fatalf("sidecar probes %+v %+v %+v: want all three on the ops port", sc.StartupProbe, sc.LivenessProbe, sc.ReadinessProbe)
		}
		paths = append(paths, p.HTTPGet.Path)
	}
	if strings.Join(paths, " ") != "/healthz /healthz /readyz" {
		t.Fatalf("probe paths %v", paths)
	}
	h := sidecartest.Start(t, redisstoretest.New(t), nil)
	for _, p := range append(paths, "/metrics") {
		if r := sidecartest.Do(t, "GET", h.Ops+p, ""); r.Status != 200 {
			t.Fatalf("GET %s on the ops listener: %d", p, r.Status)
		}
	}

	// Every ConfigMap key is a variable the README documents, and the
	// listener values are the code's defaults.
	readme, _ := os.ReadFile("../../README.md")
	cm := ms["ConfigMap/agent-sidecar"]
	for k := range cm.Data {
		if !strings.Contains(string(readme), "`"+k+"`") {
			t.Errorf("ConfigMap key %s is not a documented variable", k)
		}
	}
	if cm.Data["SIDECAR_LISTEN_ADDR"] != cfg.ListenAddr || cm.Data["SIDECAR_OPS_ADDR"] != cfg.OpsAddr {
		t.Errorf("ConfigMap listeners %q %q differ from the defaults %q %q", cm.Data["SIDECAR_LISTEN_ADDR"], cm.Data["SIDECAR_OPS_ADDR"], cfg.ListenAddr, cfg.OpsAddr)
	}
	if err := configErr(cm.Data); err != nil {
		t.Errorf("the ConfigMap is not a valid configuration: %v", err)
	}

	pm := ms["PodMonitor/agent-sidecar"]
	if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port != "ops" || pm.Spec.PodMetricsEndpoints[0].Path != "/metrics" {
		t.Fatalf("PodMonitor endpoints %+v", pm.Spec.PodMetricsEndpoints)
	}
	for k, v := range pm.Spec.Selector.MatchLabels {
		if dep.Spec.Template.Metadata.Labels[k] != v {
			t.Fatalf("PodMonitor selects %s=%s, which the pods do not carry", k, v)
		}
	}
}

func configErr(data map[string]string) error {
	_, err := sidecar.LoadConfig(envconf.Env(data))
	return err
}
