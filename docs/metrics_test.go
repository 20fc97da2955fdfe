package docs_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// metrics.md opens with ten series and a curl | grep that shows them: on a
// live sidecar with some traffic, every one of the ten is served, and the
// one-liner prints each of them unless all its series are labelled zeros
// (which the doc says it leaves out).
func TestMetricsTenSeriesFirst(t *testing.T) {
	raw, err := os.ReadFile("metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "\n## The ten series to look at first\n")
	j := strings.Index(doc, "\n## What ships with it\n")
	if i < 0 || j < i || strings.Count(doc[:i], "\n## ") != 0 {
		t.Fatal(`metrics.md does not open with "## The ten series to look at first"`)
	}
	section := doc[i:j]
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(sidecar_[a-z_]+)` \\|").FindAllStringSubmatch(section, -1) {
		names = append(names, m[1])
	}
	if len(names) != 10 {
		t.Fatalf("the opening table names %d series, want ten: %v", len(names), names)
	}
	oneLiner := block(t, "metrics.md", "## The ten series to look at first", "sh")

	h := start(t)
	const s = "/v1/users/alice/sessions/m1"
	for _, c := range []struct{ method, path, body string }{
		{"POST", s + "/entries", `{"question":"q","answer":"a"}`},
		{"POST", s + "/usage", `{"model":"gpt-4o-mini","tokens_in":10,"tokens_out":5}`},
		{"POST", s + "/complete", ""},
		{"POST", "/v1/locks/m1", `{"ttl_ms":60000}`},
	} {
		if r := h.Do(t, c.method, c.path, c.body); r.Status >= 300 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	page := sidecartest.Do(t, "GET", h.Ops+"/metrics", "").Body
	addr := strings.TrimPrefix(h.Ops, "http://")
	out, err := exec.Command("bash", "-o", "pipefail", "-c", strings.ReplaceAll(oneLiner, "localhost:9464", addr)).Output()
	if err != nil {
		t.Fatalf("the one-liner: %v\n%s", err, oneLiner)
	}
	shown := string(out)
	for _, name := range names {
		series := regexp.MustCompile("(?m)^"+name+"(_count)?[{ ].*$").FindAllString(page, -1)
		if len(series) == 0 {
			t.Errorf("%s is not on /metrics", name)
			continue
		}
		if regexp.MustCompile("(?m)^" + name + "(_count)?[{ ]").MatchString(shown) {
			continue
		}
		for _, line := range series {
			if !strings.HasSuffix(line, "} 0") {
				t.Errorf("the one-liner does not show %s, though /metrics has %q", name, line)
			}
		}
	}
	if n := strings.Count(shown, "\n"); n > 100 {
		t.Errorf("the one-liner printed %d lines; the opening promises a short page", n)
	}
}

// The API latency histogram keeps few buckets (it is most of /metrics), the
// ones the reference lists, with the latency alert's 0.5 s threshold an edge.
func TestHTTPLatencyBuckets(t *testing.T) {
	h := start(t)
	page := sidecartest.Do(t, "GET", h.Ops+"/metrics", "").Body
	var les []string
	for _, m := range regexp.MustCompile(`(?m)^sidecar_http_request_duration_seconds_bucket\{route="GET /v1/locks/\{name\}",le="([^"]+)"\}`).FindAllStringSubmatch(page, -1) {
		les = append(les, m[1])
	}
	if got, want := strings.Join(les, " "), "0.0005 0.001 0.0025 0.005 0.025 0.1 0.5 2.5 10 +Inf"; got != want {
		t.Fatalf("buckets of one route: %s, want %s (as metrics.md lists them)", got, want)
	}
	doc, _ := os.ReadFile("metrics.md")
	if !strings.Contains(string(doc), "buckets 0.5 ms … 10 s (nine: 0.5, 1, 2.5, 5, 25, 100, 500 ms, 2.5, 10 s)") {
		t.Fatal("metrics.md does not list the API latency buckets")
	}
	rules, _ := os.ReadFile("../deploy/prometheus/rules.yml")
	if !strings.Contains(string(rules), "(rate(sidecar_http_request_duration_seconds_bucket{route!=\"POST /v1/locks/{name}\"}[5m]))\n          ) > 0.5") {
		t.Fatal("rules.yml's API latency alert no longer fires above 0.5 s: keep its threshold a bucket edge")
	}
}

// The reference and the product agree: every metric a sidecar running
// every module serves is in metrics.md's reference tables, and every
// metric of the tables is served (after the traffic below, which gives
// the metrics that wait for a first use their first series).
func TestMetricsReferenceComplete(t *testing.T) {
	raw, err := os.ReadFile("metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, "\n## Reference\n"), strings.Index(doc, "\n## Prometheus\n")
	if i < 0 || j < i {
		t.Fatal(`metrics.md has no "## Reference" before "## Prometheus"`)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(sidecar_[a-z_]+)` \\|").FindAllStringSubmatch(doc[i:j], -1) {
		documented[m[1]] = true
	}
	h := start(t)
	const s = "/v1/users/alice/sessions/m1"
	for _, c := range []struct{ method, path, body string }{
		{"POST", s + "/entries", `{"question":"q","answer":"a","qa_id":"q1"}`},
		{"PUT", s + "/entries/q1/feedback", `{"feedback_score":5}`},
		{"POST", s + "/usage", `{"model":"gpt-4o-mini","tokens_in":10,"tokens_out":5}`},
		{"POST", s + "/usage", `{"model":"acme-llm-7","tokens_in":10,"error":true}`},
		{"POST", s + "/complete", ""},
		{"POST", "/v1/locks/m1", `{"ttl_ms":60000}`},
		{"POST", s + "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	} {
		if r := h.Do(t, c.method, c.path, c.body); r.Status >= 300 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	served := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (sidecar_[a-z_]+) `).FindAllStringSubmatch(sidecartest.Do(t, "GET", h.Ops+"/metrics", "").Body, -1) {
		served[m[1]] = true
	}
	for name := range served {
		if !documented[name] {
			t.Errorf("%s is served but not in metrics.md's reference", name)
		}
	}
	for name := range documented {
		if !served[name] {
			t.Errorf("metrics.md's reference lists %s, which the sidecar does not serve", name)
		}
	}
}
