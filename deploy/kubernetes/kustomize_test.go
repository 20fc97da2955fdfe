package kubernetes

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The variants a user applies with kubectl apply -k, rendered by the same
// kustomize library kubectl embeds.

const sidecarImage = "ghcr.io/agentsidecar/agentsidecar"

// render runs kustomize on a directory of the disk, as kubectl apply -k does
// (root-only load restrictions, no plugins).
func render(t *testing.T, dir string) resmap.ResMap {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return m
}

// renderYAML is render as the multi-document YAML kubectl would apply.
func renderYAML(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := render(t, dir).AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// userKustomization writes a kustomization.yaml into a fresh directory, as a
// user's own overlay, and returns the directory. kustomize takes only
// relative paths to other kustomizations: build makes it with rel, which
// turns a directory of this package into a path from the new one.
func userKustomization(t *testing.T, build func(rel func(string) string) types.Kustomization) string {
	t.Helper()
	dir := t.TempDir()
	rel := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(dir, a)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := build(rel)
	k.APIVersion, k.Kind = types.KustomizationVersion, types.KustomizationKind
	b, err := yaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// bothDir is a user's overlay with both components in namespace agents.
func bothDir(t *testing.T) string {
	return userKustomization(t, func(rel func(string) string) types.Kustomization {
		return types.Kustomization{
			Namespace:  "agents",
			Resources:  []string{rel("base")},
			Components: []string{rel("components/podmonitor"), rel("components/redis")},
		}
	})
}

// variants renders every shipped way to deploy.
func variants(t *testing.T) map[string]resmap.ResMap {
	return map[string]resmap.ResMap{
		"plain":               render(t, "."),
		"prometheus-operator": render(t, "overlays/prometheus-operator"),
		"trial":               render(t, "overlays/trial"),
		"both components":     render(t, bothDir(t)),
	}
}

// ids lists the rendered objects as "Kind namespace/name", sorted.
func ids(m resmap.ResMap) []string {
	var out []string
	for _, r := range m.Resources() {
		out = append(out, r.GetKind()+" "+r.GetNamespace()+"/"+r.GetName())
	}
	slices.Sort(out)
	return out
}

func decode[T any](t *testing.T, r *resource.Resource) T {
	t.Helper()
	var v T
	b, err := r.AsYAML()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", r.CurId(), err)
	}
	return v
}

// get decodes the one rendered object of that kind, namespace and name.
func get[T any](t *testing.T, m resmap.ResMap, kind, namespace, name string) T {
	t.Helper()
	for _, r := range m.Resources() {
		if r.GetKind() == kind && r.GetNamespace() == namespace && r.GetName() == name {
			return decode[T](t, r)
		}
	}
	t.Fatalf("no %s %s/%s in %v", kind, namespace, name, ids(m))
	panic("unreachable")
}

var baseIDs = []string{
	"ConfigMap /agent-sidecar",
	"ConfigMap /agent-sidecar-dashboard",
	"Deployment /agent",
}

// The plain path needs no CRD and ships no Redis and no Secret; the pods
// still carry what a plain Prometheus discovers them by.
func TestKustomizeBase(t *testing.T) {
	m := render(t, ".")
	if got := ids(m); !slices.Equal(got, baseIDs) {
		t.Fatalf("deploy/kubernetes renders %v, want %v", got, baseIDs)
	}
	if a, b := renderYAML(t, "."), renderYAML(t, "base"); string(a) != string(b) {
		t.Fatal("deploy/kubernetes and deploy/kubernetes/base render differently")
	}
	for _, r := range m.Resources() {
		if g := r.GetGvk().Group; g != "" && g != "apps" {
			t.Errorf("%s needs API group %s, which a plain cluster lacks", r.CurId(), g)
		}
	}
	dep := get[kDeployment](t, m, "Deployment", "", "agent")
	if got := dep.Spec.Template.Metadata.Labels["agent-sidecar/scrape"]; got != "true" {
		t.Errorf("pod label agent-sidecar/scrape = %q, want \"true\"", got)
	}
	if got := dep.container(t, "sidecar").port("ops"); got != 9464 {
		t.Errorf("sidecar port ops = %d, want 9464", got)
	}
}

// The overlay is the base plus exactly one PodMonitor, which selects the
// sidecar pods by labels and a port name the Deployment really has.
func TestKustomizePrometheusOperatorOverlay(t *testing.T) {
	base := render(t, "base")
	m := render(t, "overlays/prometheus-operator")
	want := append(slices.Clone(baseIDs), "PodMonitor /agent-sidecar")
	slices.Sort(want)
	if got := ids(m); !slices.Equal(got, want) {
		t.Fatalf("overlay renders %v, want %v", got, want)
	}
	// Everything but the PodMonitor is the base, unchanged.
	for _, r := range base.Resources() {
		o, err := m.GetById(r.CurId())
		if err != nil {
			t.Fatal(err)
		}
		a, _ := r.AsYAML()
		b, _ := o.AsYAML()
		if string(a) != string(b) {
			t.Errorf("%s differs from the base's", r.CurId())
		}
	}

	pm := get[kPodMonitor](t, m, "PodMonitor", "", "agent-sidecar")
	if pm.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("PodMonitor apiVersion %q", pm.APIVersion)
	}
	if want := map[string]string{"agent-sidecar/scrape": "true"}; !reflect.DeepEqual(pm.Spec.Selector.MatchLabels, want) {
		t.Errorf("PodMonitor selects %v, want %v", pm.Spec.Selector.MatchLabels, want)
	}
	dep := get[kDeployment](t, m, "Deployment", "", "agent")
	if !subset(pm.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels) {
		t.Errorf("PodMonitor selects %v; the pods carry %v", pm.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels)
	}
	eps := pm.Spec.PodMetricsEndpoints
	if len(eps) != 1 || eps[0].Port != "ops" || eps[0].Path != "/metrics" {
		t.Fatalf("PodMonitor endpoints %+v, want one: ops /metrics", eps)
	}
	if dep.container(t, "sidecar").port(eps[0].Port) != 9464 {
		t.Errorf("the sidecar has no port named %q on 9464", eps[0].Port)
	}

	// A plain Prometheus's pod-discovery job keeps the same label and port.
	prom, err := os.ReadFile("../prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"__meta_kubernetes_pod_label_agent_sidecar_scrape", `regex: "true;ops"`} {
		if !strings.Contains(string(prom), s) {
			t.Errorf("deploy/prometheus/prometheus.yml's pod-discovery job lacks %s", s)
		}
	}
}

// redisAddr is where the ConfigMap points the sidecar: REDIS_URL wins over
// CACHE_HOST/CACHE_PORT, as in the code.
func redisAddr(t *testing.T, data map[string]string) (host string, port int) {
	t.Helper()
	hostport := net.JoinHostPort(data["CACHE_HOST"], data["CACHE_PORT"])
	if data["REDIS_URL"] != "" {
		u, err := url.Parse(data["REDIS_URL"])
		if err != nil {
			t.Fatal(err)
		}
		hostport = u.Host
	}
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("Redis address %q: %v", hostport, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, port
}

// The trial overlay's Redis answers where the ConfigMap sends the sidecar.
func TestKustomizeTrialRedis(t *testing.T) {
	m := render(t, "overlays/trial")
	want := []string{
		"ConfigMap agents/agent-sidecar",
		"ConfigMap agents/agent-sidecar-dashboard",
		"Deployment agents/agent",
		"Deployment agents/redis",
		"Namespace /agents",
		"Service agents/redis",
	}
	if got := ids(m); !slices.Equal(got, want) {
		t.Fatalf("trial renders %v, want %v", got, want)
	}
	checkRedis(t, m)

	redis := get[kDeployment](t, m, "Deployment", "agents", "redis")
	c := redis.container(t, "redis")
	if c.Image != "redis:7" {
		t.Errorf("Redis image %q, want redis:7", c.Image)
	}
	wantArgs := []string{"redis-server", "--save", "", "--appendonly", "no", "--maxmemory", "200mb", "--maxmemory-policy", "noeviction"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("Redis args %q, want %q", c.Args, wantArgs)
	}
	ps := redis.Spec.Template.Spec.SecurityContext
	if ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser != 999 {
		t.Errorf("Redis pod securityContext %+v, want non-root user 999 (the image's redis)", ps)
	}
	sc := c.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("Redis container securityContext %+v", sc)
	}
	src, err := os.ReadFile("components/redis/redis.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "For production use a managed Redis") || !strings.Contains(string(src), "bitnamicharts/redis") {
		t.Error("components/redis/redis.yaml does not say what to use in production")
	}
}

// checkRedis: the ConfigMap's address is <service>.<namespace>.svc.cluster.local
// and that Service, in that namespace, on that port, reaches the Redis pod's
// port 6379 and no agent pod.
func checkRedis(t *testing.T, m resmap.ResMap) {
	t.Helper()
	cm := get[kConfigMap](t, m, "ConfigMap", "agents", "agent-sidecar")
	host, port := redisAddr(t, cm.Data)
	svcName, ns, ok := strings.Cut(strings.TrimSuffix(host, ".svc.cluster.local"), ".")
	if !ok || !strings.HasSuffix(host, ".svc.cluster.local") {
		t.Fatalf("Redis host %q is not a Service's cluster name", host)
	}
	if svcName != "redis" || ns != "agents" || port != 6379 {
		t.Fatalf("the ConfigMap points at Service %s in %s port %d, want redis in agents port 6379", svcName, ns, port)
	}
	svc := get[kService](t, m, "Service", ns, svcName)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != port {
		t.Fatalf("Service %s/%s ports %+v, want %d", ns, svcName, svc.Spec.Ports, port)
	}
	redis := get[kDeployment](t, m, "Deployment", ns, "redis")
	if got := redis.container(t, "redis").port(svc.Spec.Ports[0].TargetPort); got != 6379 {
		t.Errorf("Service targetPort %q is container port %d, want 6379", svc.Spec.Ports[0].TargetPort, got)
	}
	if !subset(svc.Spec.Selector, redis.Spec.Template.Metadata.Labels) {
		t.Errorf("Service selects %v; the Redis pods carry %v", svc.Spec.Selector, redis.Spec.Template.Metadata.Labels)
	}
	if !subset(redis.Spec.Selector.MatchLabels, redis.Spec.Template.Metadata.Labels) {
		t.Errorf("Redis Deployment selector %v does not match its pods", redis.Spec.Selector.MatchLabels)
	}
	agent := get[kDeployment](t, m, "Deployment", ns, "agent")
	if subset(svc.Spec.Selector, agent.Spec.Template.Metadata.Labels) {
		t.Errorf("Service %s also selects the agent pods", svcName)
	}
}

// Both components in a user's overlay: base + PodMonitor + Redis.
func TestKustomizeBothComponents(t *testing.T) {
	m := render(t, bothDir(t))
	want := []string{
		"ConfigMap agents/agent-sidecar",
		"ConfigMap agents/agent-sidecar-dashboard",
		"Deployment agents/agent",
		"Deployment agents/redis",
		"PodMonitor agents/agent-sidecar",
		"Service agents/redis",
	}
	if got := ids(m); !slices.Equal(got, want) {
		t.Fatalf("base + both components renders %v, want %v", got, want)
	}
	checkRedis(t, m)
	pm := get[kPodMonitor](t, m, "PodMonitor", "agents", "agent-sidecar")
	redis := get[kDeployment](t, m, "Deployment", "agents", "redis")
	if subset(pm.Spec.Selector.MatchLabels, redis.Spec.Template.Metadata.Labels) {
		t.Error("the PodMonitor also selects the Redis pods")
	}
}

// The image is retargeted as the README says: an images: entry in an
// overlay, or kustomize edit set image on the base's own entry.
func TestKustomizeImageOverride(t *testing.T) {
	sidecar := func(m resmap.ResMap, ns string) (string, string) {
		d := get[kDeployment](t, m, "Deployment", ns, "agent")
		return d.container(t, "sidecar").Image, d.container(t, "agent").Image
	}
	const agentImage = "ghcr.io/example/agent:latest"
	if s, a := sidecar(render(t, "."), ""); s != sidecarImage+":latest" || a != agentImage {
		t.Fatalf("base images %q %q", s, a)
	}

	// A user's overlay.
	dir := userKustomization(t, func(rel func(string) string) types.Kustomization {
		return types.Kustomization{
			Resources: []string{rel(".")},
			Images:    []types.Image{{Name: sidecarImage, NewName: "127.0.0.1:5000/agentsidecar", NewTag: "v1.2.3"}},
		}
	})
	if s, a := sidecar(render(t, dir), ""); s != "127.0.0.1:5000/agentsidecar:v1.2.3" || a != agentImage {
		t.Errorf("overlay images %q %q, want 127.0.0.1:5000/agentsidecar:v1.2.3 and %s unchanged", s, a, agentImage)
	}

	// The base's entry edited in a copy, as `kustomize edit set image
	// ghcr.io/agentsidecar/agentsidecar=127.0.0.1:5000/agentsidecar:v2` in
	// base/ does: it updates the one entry of that name.
	copyDir := t.TempDir()
	raw, err := os.ReadFile("base/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k types.Kustomization
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range k.Images {
		if k.Images[i].Name == sidecarImage {
			k.Images[i].NewName, k.Images[i].NewTag = "127.0.0.1:5000/agentsidecar", "v2"
			n++
		}
	}
	if n != 1 {
		t.Fatalf("base/kustomization.yaml has %d images: entries named %s, want 1", n, sidecarImage)
	}
	for _, f := range k.Resources {
		b, err := os.ReadFile(filepath.Join("base", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copyDir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := yaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copyDir, "kustomization.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	if s, a := sidecar(render(t, copyDir), ""); s != "127.0.0.1:5000/agentsidecar:v2" || a != agentImage {
		t.Errorf("edited base images %q %q", s, a)
	}

	// The documented commands exist: the Dockerfile's build argument, the
	// push, and the edit on this image name.
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dockerfile), "\nARG VERSION=") {
		t.Error("the Dockerfile has no ARG VERSION")
	}
	for _, s := range []string{"docker build --build-arg VERSION=", "docker push ", "kustomize edit set image " + sidecarImage + "="} {
		if !strings.Contains(string(readme), s) {
			t.Errorf("deploy/kubernetes/README.md lacks %q", s)
		}
	}
}

// Every container of every rendered Deployment has a memory limit (exact
// values here, so a change is a decision) at or above its request.
func TestKustomizeResourceLimits(t *testing.T) {
	want := map[string]string{
		"agent/sidecar": "128Mi",
		"agent/agent":   "512Mi",
		"redis/redis":   "256Mi",
	}
	seen := map[string]bool{}
	for name, m := range variants(t) {
		for _, r := range m.Resources() {
			if r.GetKind() != "Deployment" {
				continue
			}
			d := decode[kDeployment](t, r)
			for _, c := range d.all() {
				key := d.Metadata.Name + "/" + c.Name
				seen[key] = true
				lim := c.Resources.Limits["memory"]
				if w, ok := want[key]; !ok || lim != w {
					t.Errorf("%s: %s memory limit %q, want %q", name, key, lim, w)
				}
				if mebibytes(t, c.Resources.Requests["memory"]) > mebibytes(t, lim) {
					t.Errorf("%s: %s requests %s over its limit %s", name, key, c.Resources.Requests["memory"], lim)
				}
			}
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("no variant renders container %s", key)
		}
	}
}

func mebibytes(t *testing.T, q string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSuffix(q, "Mi"))
	if err != nil || !strings.HasSuffix(q, "Mi") {
		t.Fatalf("memory quantity %q: want <n>Mi", q)
	}
	return n
}

var createSecret = regexp.MustCompile(`kubectl create secret generic ([a-z0-9-]+)`)
var fromLiteral = regexp.MustCompile(`--from-literal=([a-z0-9-]+)=`)

// No variant ships a Secret (no placeholder password to deploy by
// accident); every Secret reference is optional and names the Secret and
// keys the README's kubectl create secret command makes.
func TestKustomizeSecretIsTheUsers(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmd := createSecret.FindSubmatch(readme)
	if cmd == nil {
		t.Fatal("deploy/kubernetes/README.md has no kubectl create secret generic command")
	}
	documented := map[string]bool{}
	for _, k := range fromLiteral.FindAllSubmatch(readme, -1) {
		documented[string(k[1])] = true
	}
	if want := map[string]bool{"redis-password": true, "api-token": true}; !reflect.DeepEqual(documented, want) {
		t.Fatalf("README creates keys %v, want %v", documented, want)
	}
	for name, m := range variants(t) {
		refs := 0
		for _, r := range m.Resources() {
			if r.GetKind() == "Secret" {
				t.Errorf("%s renders %s: no variant may ship a Secret", name, r.CurId())
			}
			if r.GetKind() != "Deployment" {
				continue
			}
			d := decode[kDeployment](t, r)
			for _, c := range d.all() {
				for _, e := range c.Env {
					if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						continue
					}
					ref := e.ValueFrom.SecretKeyRef
					refs++
					if ref.Name != string(cmd[1]) || !documented[ref.Key] || ref.Optional == nil || !*ref.Optional {
						t.Errorf("%s: %s/%s %s from %+v: want an optional key of Secret %s the README creates",
							name, d.Metadata.Name, c.Name, e.Name, ref, cmd[1])
					}
				}
			}
		}
		if refs != 3 {
			t.Errorf("%s: %d Secret references, want 3 (sidecar: password and token; agent: token)", name, refs)
		}
	}
}
