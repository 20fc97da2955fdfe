package usage_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/client"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/pricing"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
)

// One session posting more model names than the caps keeps
// USAGE_MAX_MODELS_PER_SESSION rows plus "other", the day's per-model hash
// USAGE_MAX_MODELS_PER_DAY names plus "other" with a TTL, and the sums stay
// exact; the old all-time hash is not written.
func TestModelNamesAreBounded(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"USAGE_MAX_MODELS_PER_DAY": "100", "USAGE_BY_MODEL_DAYS": "7"})
		const names = 150
		for i := range names {
			if r := h.Do(t, "POST", "/v1/users/u1/sessions/s/usage", fmt.Sprintf(`{"model":"m-%03d","tokens_in":1,"cost_usd":0.001}`, i)); r.Status != 201 {
				t.Fatalf("post %d: %d %s", i, r.Status, r.Body)
			}
		}
		rec := getRecord(t, h, "/v1/users/u1/sessions/s")
		if len(rec.Models) != usage.DefaultSessionModels+1 || rec.Models["other"].TokensIn != names-usage.DefaultSessionModels ||
			rec.TokensIn != names || rec.CostUSD != 0.15 || rec.Calls != names {
			t.Fatalf("record: %d models, other %+v, tokens %d, cost %v, calls %d", len(rec.Models), rec.Models["other"], rec.TokensIn, rec.CostUSD, rec.Calls)
		}
		if _, ok := rec.Models["m-049"]; !ok {
			t.Fatal("the 50th name is not kept")
		}

		l := srv.Layout()
		g := l.Global(l.Bucket("u1"))
		c := srv.Client(t)
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(g.ByModel).Build()).AsInt64(); n != 0 {
			t.Fatalf("the all-time hash %s was written", g.ByModel)
		}
		day := redisDays(t, srv, "u1")[0]
		dh := hashOf(t, srv, day)
		// calls, tokens_in, tokens_out, cost per name (errors: none), and #models.
		if len(dh) != 4*101+1 || dh["#models"] != "100" || dh["other\tcalls"] != "50" {
			t.Fatalf("%s: %d fields, #models %s, other calls %s", day, len(dh), dh["#models"], dh["other\tcalls"])
		}
		if ttl, _ := c.Do(t.Context(), c.B().Ttl().Key(day).Build()).AsInt64(); ttl <= 7*86400 || ttl > 8*86400 {
			t.Fatalf("%s: TTL %d s, want 8 days", day, ttl)
		}

		var by client.CostByModel
		r := h.Do(t, "GET", "/v1/sessions/cost-by-model", "")
		r.JSON(t, &by)
		var calls int64
		for _, m := range by.Models {
			calls += m.Calls
		}
		if r.Status != 200 || len(by.Models) != 101 || calls != names || by.Models[0].Model != "other" {
			t.Fatalf("cost-by-model: %d, %d models, %d calls, first %+v", r.Status, len(by.Models), calls, by.Models[0])
		}

		// Another user's 100 new names (on Cluster in another bucket, whose
		// day hash has room: the answer folds there): still 100 names and other.
		for i := range 100 {
			if r := h.Do(t, "POST", "/v1/users/u2/sessions/s/usage", fmt.Sprintf(`{"model":"n-%03d","tokens_in":1,"cost_usd":0.002}`, i)); r.Status != 201 {
				t.Fatalf("post %d: %d %s", i, r.Status, r.Body)
			}
		}
		h.Do(t, "GET", "/v1/sessions/cost-by-model", "").JSON(t, &by)
		calls = 0
		for _, m := range by.Models {
			calls += m.Calls
		}
		if len(by.Models) != 101 || calls != names+100 || by.Models[0].Model != "other" || by.Models[0].Calls < names {
			t.Fatalf("cost-by-model over two users: %d models, %d calls, %+v", len(by.Models), calls, by.Models[:2])
		}
		if r := h.Do(t, "GET", "/v1/sessions/cost-by-model?days=1", ""); r.Status != 200 {
			t.Fatalf("days=1: %d %s", r.Status, r.Body)
		}
		for _, q := range []string{"0", "8", "x"} {
			if r := h.Do(t, "GET", "/v1/sessions/cost-by-model?days="+q, ""); r.Status != 400 || !strings.Contains(r.Body, "days") {
				t.Fatalf("days=%s: %d %s, want 400 naming days", q, r.Status, r.Body)
			}
		}
	})
}

// writePrices writes a LiteLLM-shaped file of n generated models.
func writePrices(t *testing.T, n int) string {
	t.Helper()
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("gen-model-%04d", i)] = map[string]any{"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "litellm_provider": "gen"}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var callsSeries = regexp.MustCompile(`(?m)^sidecar_llm_calls_total\{model="([^"]*)"\} (\S+)$`)

func callsByLabel(t *testing.T, h *sidecartest.Host) (map[string]string, int) {
	t.Helper()
	body := sidecartest.Do(t, "GET", h.Ops+"/metrics", "").Body
	out := map[string]string{}
	for _, m := range callsSeries.FindAllStringSubmatch(body, -1) {
		out[m[1]] = m[2]
	}
	return out, len(body)
}

// With a 3 000-model price file the scrape stays the size of the built-in
// table's: the built-in families and METRICS_MODEL_LABELS exist at zero,
// METRICS_MAX_MODEL_LABELS more appear on first use, the rest count as
// "other".
func TestModelLabelsStayBoundedWithAFullPriceFile(t *testing.T) {
	srv := redisstoretest.New(t)
	plain := start(t, srv, nil)
	_, plainSize := callsByLabel(t, plain)
	h := start(t, srv, envconf.Env{
		"MODEL_PRICES_FILE": writePrices(t, 3000), "METRICS_MODEL_LABELS": "gen-model-0007", "METRICS_MAX_MODEL_LABELS": "5",
	})
	builtin := len(pricing.Default().Families())
	series, size := callsByLabel(t, h)
	if len(series) != builtin+2 || series["gen-model-0007"] != "0" || series["other"] != "0" {
		t.Fatalf("at start: %d model series (want %d: built-in, gen-model-0007, other)", len(series), builtin+2)
	}
	if size > plainSize+2000 {
		t.Fatalf("scrape %d bytes with the 3 000-model file, %d without", size, plainSize)
	}
	for i := range 20 {
		if r := h.Do(t, "POST", "/v1/users/u1/sessions/s/usage", fmt.Sprintf(`{"model":"gen/gen-model-%04d","tokens_in":10}`, i)); r.Status != 201 {
			t.Fatalf("post %d: %d %s", i, r.Status, r.Body)
		}
	}
	series, _ = callsByLabel(t, h)
	// 0007 was known; the first five others (0000-0004) got labels; 14 are other.
	if len(series) != builtin+2+5 || series["gen-model-0007"] != "1" || series["gen-model-0004"] != "1" || series["gen-model-0005"] != "" || series["other"] != "14" {
		t.Fatalf("after 20 models: %d series, other %s: %v", len(series), series["other"], series)
	}
}

func TestConfigRangesNameTheVariable(t *testing.T) {
	for _, name := range []string{"USAGE_MAX_MODELS_PER_SESSION", "USAGE_MAX_MODELS_PER_DAY", "USAGE_BY_MODEL_DAYS", "METRICS_MAX_MODEL_LABELS"} {
		for _, v := range []string{"-1", "100000", "x"} {
			_, err := envconf.Load[usage.Config](envconf.Env{name: v})
			var ce *envconf.Error
			if !errors.As(err, &ce) || ce.Var != name {
				t.Errorf("%s=%s: %v, want an error naming %s", name, v, err, name)
			}
		}
	}
	if _, err := envconf.Load[usage.Config](envconf.Env{}); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// A session remembers its 1 000 newest idempotency keys: the hash stays at
// 2 001 fields (keys, their slots, the count), an evicted key counts again,
// a kept one answers 200.
func TestIdempotencyKeysAreBounded(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const p, keys = "/v1/users/u1/sessions/s/usage", 1003
		post := func(i int) int {
			return h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":1}`, "Idempotency-Key", fmt.Sprintf("key-%d", i)).Status
		}
		for i := range keys {
			if st := post(i); st != 201 {
				t.Fatalf("key %d: %d", i, st)
			}
		}
		k := srv.Layout().Session("u1", "s").Usage
		if n := len(hashOf(t, srv, k)); n != 2001 {
			t.Fatalf("%s holds %d fields, want 2001", k, n)
		}
		// Kept keys first: an evicted key posted again is a new key, which
		// evicts the oldest kept one (key-3 after key-0).
		for _, c := range []struct{ key, want int }{{3, 200}, {keys - 1, 200}, {0, 201}, {2, 201}, {3, 201}} {
			if st := post(c.key); st != c.want {
				t.Errorf("key %d again: %d, want %d", c.key, st, c.want)
			}
		}
		if rec := getRecord(t, h, "/v1/users/u1/sessions/s"); rec.Calls != keys+3 {
			t.Fatalf("%d calls counted, want %d", rec.Calls, keys+3)
		}
	})
}
