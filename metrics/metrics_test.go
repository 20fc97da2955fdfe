package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/metrics"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
)

func TestSessionGaugesFromRedis(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_ABANDON_AFTER_SECONDS": "1"}, sessions.Factory, usage.Factory, metrics.Factory)
		for _, s := range []string{"a", "b", "c"} {
			h.Do(t, "POST", "/v1/users/u/sessions/"+s+"/usage", `{"model":"gpt-4o","tokens_in":10,"tokens_out":2,"cost_usd":0.25}`)
		}
		h.Do(t, "POST", "/v1/users/u/sessions/b/complete", "")
		h.Do(t, "POST", "/v1/users/u/sessions/c/fail", "")
		if srv.Mini != nil {
			srv.Mini.SetTime(time.Now().Add(2 * time.Second))
		} else {
			time.Sleep(1100 * time.Millisecond)
		}
		h.Do(t, "POST", "/v1/users/u/sessions/d/entries", `{"question":"q","answer":"a"}`)
		want := `
# HELP sidecar_sessions Sessions in Redis by status now (running, abandoned, completed, failed), read at scrape time. Global: the same in every pod, aggregate with max.
# TYPE sidecar_sessions gauge
sidecar_sessions{status="abandoned"} 1
sidecar_sessions{status="completed"} 1
sidecar_sessions{status="failed"} 1
sidecar_sessions{status="running"} 1
# HELP sidecar_sessions_scrape_up 1 when the scrape-time read of session counts from Redis succeeded, else 0 (and sidecar_sessions is absent).
# TYPE sidecar_sessions_scrape_up gauge
sidecar_sessions_scrape_up 1
# HELP sidecar_usage_cost_usd All-time cost in US dollars recorded in Redis across pods. Global: aggregate with max.
# TYPE sidecar_usage_cost_usd gauge
sidecar_usage_cost_usd 0.75
# HELP sidecar_usage_tokens All-time tokens recorded in Redis across pods, by token_type. Global: aggregate with max.
# TYPE sidecar_usage_tokens gauge
sidecar_usage_tokens{token_type="input"} 30
sidecar_usage_tokens{token_type="output"} 6
`
		err := testutil.GatherAndCompare(h.Host.Registry(), strings.NewReader(want),
			"sidecar_sessions", "sidecar_sessions_scrape_up", "sidecar_usage_cost_usd", "sidecar_usage_tokens")
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestScrapeReportsRedisDown(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := sidecartest.Start(t, srv, nil, metrics.Factory)
	srv.Kill()
	want := `
# HELP sidecar_sessions_scrape_up 1 when the scrape-time read of session counts from Redis succeeded, else 0 (and sidecar_sessions is absent).
# TYPE sidecar_sessions_scrape_up gauge
sidecar_sessions_scrape_up 0
`
	if err := testutil.GatherAndCompare(h.Host.Registry(), strings.NewReader(want), "sidecar_sessions_scrape_up", "sidecar_sessions"); err != nil {
		t.Fatal(err)
	}
}

// The whole registry passes the client library's lint (naming, units, help).
func TestMetricsLintClean(t *testing.T) {
	srv := redisstoretest.New(t)
	h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory, metrics.Factory)
	problems, err := testutil.GatherAndLint(h.Host.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}
