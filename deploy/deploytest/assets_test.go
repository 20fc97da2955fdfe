package deploytest

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The shipped files read as files: the Grafana dashboard and its
// provisioning, the alerting rules, and the expressions of the dashboard,
// the rules and docs/metrics.md that the live Prometheus test runs.

// label_values(selector, label), Grafana's variable query.
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)

// grafanaVar matches $name, ${name} and ${name:format}.
var grafanaVar = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[a-z]+)?\}|\$([A-Za-z0-9_]+)`)

// substitute replaces Grafana variables by concrete values, failing on an
// unknown one.
func substitute(t *testing.T, where, expr string, vars map[string]string) string {
	t.Helper()
	return grafanaVar.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVar.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		v, ok := vars[name]
		if !ok {
			t.Errorf("%s: unknown variable %s in %s", where, m, expr)
		}
		return v
	})
}

type dashboard struct {
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		Expr       string      `json:"expr"`
		RefID      string      `json:"refId"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasource     `json:"datasource"`
}

func (v variable) queryString() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(v.Query, &o)
	return o.Query
}

func (d dashboard) all() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

type panelTarget struct{ panel, refID, expr string }

func (d dashboard) targets() []panelTarget {
	var out []panelTarget
	for _, p := range d.all() {
		for _, tg := range p.Targets {
			out = append(out, panelTarget{p.Title, tg.RefID, tg.Expr})
		}
	}
	return out
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// docQueries returns the expressions of the promql blocks of docs/metrics.md:
// one per line, a line starting with a space continuing the one before;
// comments and blank lines skipped.
func docQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(line, "```promql"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case !in || strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, " ") && len(out) > 0:
			out[len(out)-1] += "\n" + line
		default:
			out = append(out, line)
		}
	}
	if len(out) < 10 {
		t.Fatalf("%s: only %d promql queries", docsFile, len(out))
	}
	return out
}

type rule struct{ name, expr string }

func loadRules(t *testing.T) []rule {
	t.Helper()
	raw, err := os.ReadFile(promRules)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", promRules, err)
	}
	var out []rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out = append(out, rule{r.Alert + r.Record, r.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no rules", promRules)
	}
	return out
}

// TestDashboardShape checks what Grafana needs to import and provision the
// dashboard: the DS_PROMETHEUS input used by every panel and query, the
// namespace and pod variables, unique panel ids, a refId and an expression
// per query.
func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs = %+v, want one prometheus datasource input DS_PROMETHEUS", d.Inputs)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both needed", d.UID, d.Title)
	}
	isDS := func(ds *datasource) bool {
		return ds != nil && ds.Type == "prometheus" && ds.UID == "${DS_PROMETHEUS}"
	}
	var names []string
	for _, v := range d.Templating.List {
		names = append(names, v.Name)
		if v.Type == "query" && !isDS(v.Datasource) {
			t.Errorf("variable %s: datasource %+v, want ${DS_PROMETHEUS}", v.Name, v.Datasource)
		}
	}
	for _, want := range []string{"DS_PROMETHEUS", "namespace", "pod"} {
		if !slices.Contains(names, want) {
			t.Errorf("templating has %v, no %s", names, want)
		}
	}
	ids := map[int]string{}
	for _, p := range d.all() {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q: no gridPos", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if !isDS(p.Datasource) || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d queries", p.Title, p.Datasource, len(p.Targets))
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] || !isDS(tg.Datasource) {
				t.Errorf("panel %q: query %+v", p.Title, tg)
			}
			refs[tg.RefID] = true
			// Per-process series are filtered by pod; global ones by namespace.
			if !strings.Contains(tg.Expr, `namespace=~"$namespace"`) {
				t.Errorf("panel %q: %s does not filter on $namespace", p.Title, tg.Expr)
			}
		}
	}
	for _, e := range d.targets() {
		for _, g := range []string{"sidecar_sessions{", "sidecar_usage_"} {
			if strings.Contains(e.expr, g) && !strings.Contains(e.expr, "max without (instance, pod)") {
				t.Errorf("panel %q: global gauge not taken with max without (instance, pod): %s", e.panel, e.expr)
			}
		}
	}
}

// TestGrafanaProvisioning checks the provisioning files parse and point where
// docs/metrics.md says.
func TestGrafanaProvisioning(t *testing.T) {
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, Type, UID, URL string
		} `yaml:"datasources"`
	}
	readYAML(t, dsProvision, &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL == "" {
		t.Errorf("%s: %+v", dsProvision, ds)
	}
	var db struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name    string `yaml:"name"`
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, dbProvision, &db)
	if db.APIVersion != 1 || len(db.Providers) != 1 || db.Providers[0].Type != "file" || db.Providers[0].Options.Path == "" {
		t.Errorf("%s: %+v", dbProvision, db)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestRulesAggregateGlobalGaugesWithMax: every rule over a Redis-derived
// gauge takes it with max, never sum, so 50 pods do not count 50 times.
func TestRulesAggregateGlobalGaugesWithMax(t *testing.T) {
	global := regexp.MustCompile(`(?:sum|avg|count)[^()]*\(\s*(?:sidecar_sessions\{|sidecar_usage_)`)
	var names []string
	for _, r := range loadRules(t) {
		names = append(names, r.name)
		if global.MatchString(r.expr) {
			t.Errorf("rule %s sums a global gauge: %s", r.name, r.expr)
		}
	}
	sort.Strings(names)
	for _, want := range []string{"SidecarAbandonedSessionsSpike", "SidecarRedisUnavailable", "SidecarLockWaitP99High", "SidecarRedisScriptErrors", "SidecarUnpricedModelCalls"} {
		if _, found := slices.BinarySearch(names, want); !found {
			t.Errorf("rules.yml has no %s", want)
		}
	}
}
