package deploytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// The files under test, relative to this package.
const (
	promConfig    = "../prometheus/prometheus.yml"
	promRules     = "../prometheus/rules.yml"
	promRulesTest = "../prometheus/rules_test.yml"
	dashboardFile = "../grafana/agentsidecar.json"
	dsProvision   = "../grafana/provisioning/datasources/agentsidecar.yml"
	dbProvision   = "../grafana/provisioning/dashboards/agentsidecar.yml"
	docsFile      = "../../docs/metrics.md"
)

// modules.All() is cmd/sidecar's module list (a test cannot import package main).

// tool finds a Prometheus binary: skipped when absent, failed when CI=true.
func tool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/bin/" + name; isExec(p) {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not installed (CI=true): apt-get install prometheus", name)
	}
	t.Skipf("%s not installed (apt-get install prometheus)", name)
	return ""
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// run runs a command with a deadline and returns its combined output,
// failing the test when it exits non-zero.
func run(t *testing.T, stdin io.Reader, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtoolCheckConfig(t *testing.T) {
	promtool := tool(t, "promtool")
	out := run(t, nil, promtool, "check", "config", promConfig)
	if !strings.Contains(out, "SUCCESS") || !strings.Contains(out, "rules found") {
		t.Errorf("promtool check config: %s", out)
	}
}

func TestPromtoolCheckAndTestRules(t *testing.T) {
	promtool := tool(t, "promtool")
	run(t, nil, promtool, "check", "rules", promRules)
	run(t, nil, promtool, "test", "rules", promRulesTest)
}

// TestPromtoolCheckMetricsLive lints the /metrics of a running sidecar with
// every module, after some traffic.
func TestPromtoolCheckMetricsLive(t *testing.T) {
	promtool := tool(t, "promtool")
	srv := redisstoretest.NewReal(t)
	h := sidecartest.Start(t, srv, envconf.Env{"SESSION_ABANDON_AFTER_SECONDS": "1"}, modules.All()...)
	drive(t, h, h)
	body := scrape(t, h.Ops+"/metrics")
	for _, name := range []string{"sidecar_sessions{", "sidecar_llm_tokens_total{", "sidecar_lock_acquires_total{", "sidecar_redis_up ", "sidecar_http_requests_total{"} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if out := run(t, strings.NewReader(body), promtool, "check", "metrics"); strings.TrimSpace(out) != "" {
		t.Errorf("promtool check metrics: %s", out)
	}
}

func scrape(t *testing.T, u string) string {
	t.Helper()
	r := sidecartest.Do(t, http.MethodGet, u, "")
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, r.Status, r.Body)
	}
	return r.Body
}

// drive sends traffic through two sidecars sharing one Redis (they may be
// the same one): three sessions ending completed, failed and abandoned,
// feedback, usage (priced, estimated, errored, unpriced), a 404, and a lock
// with a conflict, a timeout and a waiter granted on release.
func drive(t *testing.T, a, b *sidecartest.Host) {
	t.Helper()
	call := func(h *sidecartest.Host, method, path, body string, want int) sidecartest.Reply {
		t.Helper()
		r := h.Do(t, method, path, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, want)
		}
		return r
	}
	done, failed, left := "/v1/users/alice/sessions/s-done", "/v1/users/alice/sessions/s-failed", "/v1/users/bob/sessions/s-left"
	call(a, "POST", done+"/entries", `{"question":"Where is the dog?","answer":"In the garden","qa_id":"q1"}`, 201)
	call(b, "PUT", done+"/entries/q1/feedback", `{"feedback_score":5}`, 200)
	call(a, "POST", done+"/usage", `{"model":"gpt-4o","tokens_in":1200,"tokens_out":300}`, 201)
	call(b, "POST", done+"/usage", `{"model":"gpt-4o-mini","input_text":"How many legs has a dog?","output_text":"Four."}`, 201)
	call(a, "POST", done+"/complete", "", 200)
	call(b, "POST", failed+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`, 201)
	call(a, "PUT", failed+"/entries/q1/feedback", `{"feedback_score":2}`, 200)
	call(b, "POST", failed+"/usage", `{"model":"claude-3-haiku","tokens_in":10,"error":true}`, 201)
	call(a, "POST", failed+"/fail", "", 200)
	call(b, "POST", left+"/entries", `{"question":"q","answer":"a"}`, 201)
	call(a, "POST", left+"/usage", `{"model":"acme-llm-7","tokens_in":5,"tokens_out":5}`, 201)
	call(b, "GET", done+"/entries/nope", "", 404)

	var held struct {
		Token string `json:"token"`
	}
	call(a, "POST", "/v1/locks/graph", `{"owner":"w1","ttl_ms":10000}`, 200).JSON(t, &held)
	call(b, "POST", "/v1/locks/graph", `{"owner":"w2"}`, 409)               // conflict
	call(a, "POST", "/v1/locks/graph", `{"owner":"w3","wait_ms":100}`, 409) // timeout
	waiter := make(chan string, 1)
	go func() { // granted when w1 releases (no t.Fatal off the test goroutine)
		resp, err := http.Post(b.API+"/v1/locks/graph", "application/json", strings.NewReader(`{"owner":"w4","wait_ms":5000}`))
		if err != nil {
			waiter <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		waiter <- strconv.Itoa(resp.StatusCode) + " " + string(body)
	}()
	time.Sleep(300 * time.Millisecond)
	call(a, "DELETE", "/v1/locks/graph", `{"token":"`+held.Token+`"}`, 200)
	got := <-waiter
	code, body, _ := strings.Cut(got, " ")
	if code != "200" {
		t.Fatalf("waiting acquire: %s", got)
	}
	if err := json.Unmarshal([]byte(body), &held); err != nil {
		t.Fatalf("waiting acquire: %s: %v", body, err)
	}
	call(b, "DELETE", "/v1/locks/graph", `{"token":"`+held.Token+`"}`, 200)
}

// prometheus is a running Prometheus server.
type prometheus struct {
	base    string // http://127.0.0.1:port
	logFile string // its stdout and stderr
}

// log returns what Prometheus logged, for failure messages.
func (p *prometheus) log() string {
	b, _ := os.ReadFile(p.logFile)
	return string(b)
}

// shippedConfig is deploy/prometheus/prometheus.yml with only its static
// target replaced by targets and its intervals shortened to 1 s.
func shippedConfig(t *testing.T, targets []string) string {
	t.Helper()
	raw, err := os.ReadFile(promConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(raw)
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	for _, r := range [][2]string{
		{`targets: ["127.0.0.1:9464"]`, "targets: [" + strings.Join(quoted, ", ") + "]"},
		{"scrape_interval: 15s", "scrape_interval: 1s"},
		{"scrape_timeout: 5s", "scrape_timeout: 1s"},
		{"evaluation_interval: 15s", "evaluation_interval: 1s"},
	} {
		if n := strings.Count(cfg, r[0]); n != 1 {
			t.Fatalf("%s has %q %d times, want once: update shippedConfig", promConfig, r[0], n)
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	return cfg
}

// startPrometheus runs bin with the shipped config (and rules) in a temp dir
// on a free loopback port until the test ends.
func startPrometheus(t *testing.T, bin string, targets []string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	rules, err := os.ReadFile(promRules)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(shippedConfig(t, targets)), 0o644); err != nil {
		t.Fatal(err)
	}
	var lastLog string
	for attempt := 0; attempt < 3; attempt++ { // a free port can be taken between asking and binding
		port, err := redisstoretest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		p := &prometheus{base: "http://127.0.0.1:" + strconv.Itoa(port), logFile: filepath.Join(dir, "prometheus"+strconv.Itoa(attempt)+".log")}
		logf, err := os.Create(p.logFile)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { logf.Close() })
		cmd := exec.Command(bin,
			"--config.file="+filepath.Join(dir, "prometheus.yml"),
			"--storage.tsdb.path="+filepath.Join(dir, "data"+strconv.Itoa(attempt)),
			"--web.listen-address=127.0.0.1:"+strconv.Itoa(port),
			"--log.level=warn",
		)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatalf("start prometheus: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				deadline = time.Time{}
				continue
			default:
			}
			if resp, err := http.Get(p.base + "/-/ready"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return p
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		lastLog = p.log()
		_ = cmd.Process.Kill()
	}
	t.Fatalf("prometheus did not become ready:\n%s", lastLog)
	return nil
}

type apiReply struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
	Data      json.RawMessage `json:"data"`
}

// api calls Prometheus's HTTP API; an error reply is returned, not fatal.
func (p *prometheus) api(t *testing.T, path string, params url.Values) apiReply {
	t.Helper()
	resp, err := http.Get(p.base + path + "?" + params.Encode())
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	var r apiReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("GET %s: %d: %v", path, resp.StatusCode, err)
	}
	return r
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) float(t *testing.T) float64 {
	t.Helper()
	str, _ := s.Value[1].(string)
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("sample value %v: %v", s.Value, err)
	}
	return f
}

// query runs an instant query: the reply's error (if any) and its samples.
func (p *prometheus) query(t *testing.T, expr string) ([]sample, error) {
	t.Helper()
	r := p.api(t, "/api/v1/query", url.Values{"query": {expr}})
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	if len(r.Warnings) > 0 {
		return nil, fmt.Errorf("warnings: %v", r.Warnings)
	}
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(r.Data, &data); err != nil {
		return nil, err
	}
	switch data.ResultType {
	case "vector":
		var out []sample
		err := json.Unmarshal(data.Result, &out)
		return out, err
	case "scalar":
		var v [2]any
		err := json.Unmarshal(data.Result, &v)
		return []sample{{Value: v}}, err
	default:
		return nil, fmt.Errorf("result type %s", data.ResultType)
	}
}

func (p *prometheus) strings(t *testing.T, path string, params url.Values) []string {
	t.Helper()
	r := p.api(t, path, params)
	if r.Status != "success" {
		t.Fatalf("%s: %s: %s", path, r.ErrorType, r.Error)
	}
	var out []string
	if err := json.Unmarshal(r.Data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually runs an instant query until ok accepts its samples, for a few
// seconds: a scrape whose bounded Redis read timed out on a busy machine
// leaves sidecar_sessions absent until the next one.
func (p *prometheus) eventually(t *testing.T, expr string, ok func([]sample) bool) ([]sample, error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := p.query(t, expr)
		if err != nil || ok(got) || time.Now().After(deadline) {
			return got, err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitFor polls until every expression returns at least one sample.
func (p *prometheus) waitFor(t *testing.T, timeout time.Duration, exprs ...string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for _, e := range exprs {
		for {
			got, err := p.query(t, e)
			if err != nil {
				t.Fatalf("%s: %v", e, err)
			}
			if len(got) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no sample for %s within %s\nprometheus log:\n%s", e, timeout, p.log())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// metricName matches the metric names an expression uses.
var metricName = regexp.MustCompile(`\b(?:sidecar|process|go)_[A-Za-z0-9_]+`)

// checkNames fails for every metric name in expr that Prometheus has not
// scraped (a typo, or a metric the sidecar does not export).
func checkNames(t *testing.T, where, expr string, known map[string]bool) {
	t.Helper()
	for _, n := range metricName.FindAllString(expr, -1) {
		if !known[n] {
			t.Errorf("%s: metric %s is unknown to Prometheus (not exported by the sidecar?)\n  %s", where, n, expr)
		}
	}
}

// TestPrometheusRunsEveryExpression runs a real Prometheus with the shipped
// config and rules against two real sidecars sharing one real Redis, and runs
// every expression of the dashboard and the rules through its query API.
func TestPrometheusRunsEveryExpression(t *testing.T) {
	bin := tool(t, "prometheus")
	srv := redisstoretest.NewReal(t)
	env := envconf.Env{"SESSION_ABANDON_AFTER_SECONDS": "1"}
	a := sidecartest.Start(t, srv, env, modules.All()...)
	b := sidecartest.Start(t, srv, env, modules.All()...)
	targets := []string{strings.TrimPrefix(a.Ops, "http://"), strings.TrimPrefix(b.Ops, "http://")}
	p := startPrometheus(t, bin, targets)
	p.waitFor(t, 20*time.Second, `count(up{job="agent-sidecar"} == 1) == 2`)

	drive(t, a, b)
	p.waitFor(t, 20*time.Second,
		`sidecar_sessions{status="abandoned"} >= 1`,
		`sum(sidecar_lock_acquires_total{outcome="conflict"}) >= 1`,
		`sum(sidecar_lock_wait_seconds_count{outcome="acquired"}) >= 2`,
		`sum(sidecar_llm_unpriced_calls_total) >= 1`,
		`sum(sidecar_session_feedback_total{score="2"}) >= 1`,
		`count(sidecar_http_requests_total{code="404"}) >= 1`,
	)
	time.Sleep(2500 * time.Millisecond) // two more scrapes: rate() sees the series born with the traffic

	known := map[string]bool{}
	for _, n := range p.strings(t, "/api/v1/label/__name__/values", nil) {
		known[n] = true
	}

	// The dashboard's template variables, as Grafana would resolve them.
	dash := loadDashboard(t)
	vars := map[string]string{"__rate_interval": "1m", "__interval": "15s", "__range": "5m"}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := substitute(t, "variable "+v.Name, v.queryString(), vars)
		checkNames(t, "variable "+v.Name, q, known)
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
		}
		values := p.strings(t, "/api/v1/label/"+m[2]+"/values", url.Values{"match[]": {m[1]}})
		if len(values) == 0 {
			t.Fatalf("variable %s: %s returns no values", v.Name, q)
		}
		vars[v.Name] = values[0]
	}
	if vars["namespace"] != "local" || vars["pod"] != "127.0.0.1" {
		t.Errorf("variables namespace=%q pod=%q, want local and 127.0.0.1 (the static job's labels)", vars["namespace"], vars["pod"])
	}

	n := 0
	for _, pt := range dash.targets() {
		where := fmt.Sprintf("panel %q %s", pt.panel, pt.refID)
		expr := substitute(t, where, pt.expr, vars)
		checkNames(t, where, expr, known)
		got, err := p.eventually(t, expr, func(s []sample) bool { return len(s) > 0 })
		switch {
		case err != nil:
			t.Errorf("%s: %v\n  %s", where, err, expr)
		case len(got) == 0:
			t.Errorf("%s: no data after the test traffic\n  %s", where, expr)
		}
		n++
	}
	if n < 30 {
		t.Errorf("only %d dashboard expressions", n)
	}

	rules := loadRules(t)
	for _, r := range rules {
		where := "rule " + r.name
		if strings.Contains(r.expr, "$") {
			t.Errorf("%s: expression has a template variable: %s", where, r.expr)
		}
		checkNames(t, where, r.expr, known)
		if _, err := p.query(t, r.expr); err != nil {
			t.Errorf("%s: %v\n  %s", where, err, r.expr)
		}
	}
	for i, expr := range docQueries(t) {
		where := fmt.Sprintf("%s query %d", docsFile, i+1)
		checkNames(t, where, expr, known)
		if _, err := p.query(t, expr); err != nil {
			t.Errorf("%s: %v\n  %s", where, err, expr)
		}
	}
	checkRuleHealth(t, p, len(rules))
	checkTotals(t, p, a)
	checkAlertPending(t, p, "SidecarUnpricedModelCalls")
}

// checkRuleHealth: Prometheus loaded the shipped rules and evaluates them
// all without error.
func checkRuleHealth(t *testing.T, p *prometheus, want int) {
	t.Helper()
	r := p.api(t, "/api/v1/rules", nil)
	var data struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(r.Data, &data); err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, g := range data.Groups {
		for _, rule := range g.Rules {
			got++
			if rule.Health == "err" {
				t.Errorf("rule %s: %s", rule.Name, rule.LastError)
			}
		}
	}
	if got != want {
		t.Errorf("prometheus loaded %d rules, rules.yml has %d", got, want)
	}
}

// checkTotals: with two pods, the dashboard's aggregations give the fleet's
// true totals: Redis-derived gauges once (max), counters summed. (Only the
// modules' own counters are summed here: the session event and script
// counters are package-level, so two hosts in one test process share them.)
func checkTotals(t *testing.T, p *prometheus, h *sidecartest.Host) {
	t.Helper()
	var st struct {
		Sessions  map[string]float64 `json:"sessions"`
		TokensIn  float64            `json:"tokens_in"`
		TokensOut float64            `json:"tokens_out"`
		Calls     float64            `json:"calls"`
	}
	h.Do(t, "GET", "/v1/sessions/stats", "").JSON(t, &st)
	stats := st.Sessions
	for expr, want := range map[string]float64{
		`sum(max without (instance, pod) (sidecar_sessions{status="running"}))`:   stats["running"],
		`sum(max without (instance, pod) (sidecar_sessions{status="abandoned"}))`: stats["abandoned"],
		`sum(max without (instance, pod) (sidecar_sessions{status="completed"}))`: stats["completed"],
		`sum(max without (instance, pod) (sidecar_sessions{status="failed"}))`:    stats["failed"],
		`sum(max without (instance, pod) (sidecar_usage_calls))`:                  st.Calls,
		`sum(max without (instance, pod) (sidecar_usage_tokens))`:                 st.TokensIn + st.TokensOut,
		`sum(sidecar_llm_calls_total)`:                                            4,
		`sum(sidecar_sessions_ended_total)`:                                       2,
		`count(sidecar_redis_up == 1)`:                                            2,
	} {
		got, err := p.eventually(t, expr, func(s []sample) bool { return len(s) == 1 && s[0].float(t) == want })
		if err != nil || len(got) != 1 {
			t.Errorf("%s: %v %v", expr, got, err)
			continue
		}
		if v := got[0].float(t); v != want {
			t.Errorf("%s = %v, want %v", expr, v, want)
		}
	}
	if stats["abandoned"] != 1 || stats["completed"] != 1 || stats["failed"] != 1 {
		t.Errorf("stats %v: want one abandoned, completed and failed session", stats)
	}
}

// checkAlertPending: the unpriced call drove makes the alert pending.
func checkAlertPending(t *testing.T, p *prometheus, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := p.api(t, "/api/v1/alerts", nil)
		var data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		}
		if err := json.Unmarshal(r.Data, &data); err != nil {
			t.Fatal(err)
		}
		for _, a := range data.Alerts {
			if a.Labels["alertname"] == name && a.Labels["namespace"] == "local" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("alert %s not pending; alerts: %+v", name, data.Alerts)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
