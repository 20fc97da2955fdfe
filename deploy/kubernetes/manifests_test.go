// Package kubernetes holds the example manifests; its tests render them
// with kustomize and check that they agree with the code's defaults.
package kubernetes

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"slices"
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
				Name     string `yaml:"name"`
				Key      string `yaml:"key"`
				Optional *bool  `yaml:"optional"`
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

// load renders the base with the PodMonitor component (what
// overlays/prometheus-operator applies) and indexes it by kind/name.
func load(t *testing.T) map[string]manifest {
	t.Helper()
	const dir = "overlays/prometheus-operator"
	out := map[string]manifest{}
	dec := yaml.NewDecoder(bytes.NewReader(renderYAML(t, dir)))
	for {
		var m manifest
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		out[m.Kind+"/"+m.Metadata.Name] = m
	}
	var got []string
	for k := range out {
		got = append(got, k)
	}
	slices.Sort(got)
	want := []string{"ConfigMap/agent-sidecar", "ConfigMap/agent-sidecar-dashboard", "Deployment/agent", "PodMonitor/agent-sidecar"}
	if !slices.Equal(got, want) {
		t.Fatalf("%s renders %v, want %v", dir, got, want)
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
	// The secrets come from the Secret the user creates (no Secret is
	// shipped, so the reference is optional and deploy/kubernetes/README.md's
	// kubectl create secret command makes exactly these keys:
	// TestKustomizeSecretIsTheUsers); the agent gets the same token the
	// sidecar requires.
	secretRefs := func(c *container) map[string]string {
		out := map[string]string{}
		for _, e := range c.Env {
			if r := e.ValueFrom.SecretKeyRef; r.Name != "" {
				out[e.Name] = r.Name + "/" + r.Key + "/optional=" + strconv.FormatBool(r.Optional != nil && *r.Optional)
			}
		}
		return out
	}
	if got, want := secretRefs(sc), map[string]string{
		"CACHE_PASSWORD":    "agent-sidecar/redis-password/optional=true",
		"SIDECAR_API_TOKEN": "agent-sidecar/api-token/optional=true",
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sidecar secrets %v, want %v", got, want)
	}
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d app containers, want the one agent", len(dep.Spec.Template.Spec.Containers))
	}
	if got, want := secretRefs(&dep.Spec.Template.Spec.Containers[0]), map[string]string{
		"SIDECAR_API_TOKEN": "agent-sidecar/api-token/optional=true",
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("agent secrets %v, want %v", got, want)
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
