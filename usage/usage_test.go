package usage_test

import (
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/client"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/pricing"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
)

func start(t *testing.T, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	return sidecartest.Start(t, srv, env, sessions.Factory, usage.Factory)
}

// record is a session record as clients read it: the Go client's type, so
// these tests also hold the published type to what the server answers.
type record = client.SessionRecord

type page struct {
	Sessions   []record `json:"sessions"`
	NextCursor *string  `json:"next_cursor"`
}

// advance moves the Redis clock past the abandonment threshold of 1 s:
// miniredis's clock is set, a real Redis is waited for.
func advance(t *testing.T, srv *redisstoretest.Server, d time.Duration) {
	t.Helper()
	if srv.Mini != nil {
		srv.Mini.SetTime(time.Now().Add(d))
		return
	}
	time.Sleep(d)
}

func getRecord(t *testing.T, h *sidecartest.Host, path string) record {
	t.Helper()
	r := h.Do(t, "GET", path, "")
	if r.Status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	var rec record
	r.JSON(t, &rec)
	return rec
}

func TestLifecycleAbandonedDerivedOnRead(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_ABANDON_AFTER_SECONDS": "1"})
		const a, b = "/v1/users/u1/sessions/a", "/v1/users/u1/sessions/b"
		h.Do(t, "POST", a+"/entries", `{"question":"q","answer":"a"}`)
		h.Do(t, "POST", b+"/usage", `{"model":"gpt-4o","tokens_in":10,"tokens_out":5}`)
		rec := getRecord(t, h, a)
		if rec.Status != "running" || rec.StoredStatus != "running" || rec.StartedAt == nil || rec.EntryCount != 1 || rec.EndedAt != nil || rec.TTLSeconds == nil || *rec.TTLSeconds <= 0 {
			t.Fatalf("new session: %+v", rec)
		}
		if r := h.Do(t, "POST", b+"/complete", ""); r.Status != 200 || !strings.Contains(r.Body, `"status":"completed"`) {
			t.Fatalf("complete: %d %s", r.Status, r.Body)
		}

		advance(t, srv, 1500*time.Millisecond)
		rec = getRecord(t, h, a)
		if rec.Status != "abandoned" || rec.StoredStatus != "running" {
			t.Fatalf("idle session: status %s (stored %s), want abandoned (stored running)", rec.Status, rec.StoredStatus)
		}
		if rec := getRecord(t, h, b); rec.Status != "completed" || rec.EndedAt == nil {
			t.Fatalf("completed session reads %s", rec.Status)
		}
		var p page
		h.Do(t, "GET", "/v1/users/u1/sessions?status=abandoned", "").JSON(t, &p)
		if len(p.Sessions) != 1 || p.Sessions[0].SessionID != "a" {
			t.Fatalf("abandoned list: %+v", p.Sessions)
		}
		h.Do(t, "GET", "/v1/sessions?status=running", "").JSON(t, &p)
		if len(p.Sessions) != 0 {
			t.Fatalf("running list: %+v", p.Sessions)
		}

		// Activity revives an abandoned session (it is derived, not stored),
		// and is recorded on an ended one without reopening it.
		h.Do(t, "POST", a+"/entries", `{"question":"back","answer":"again"}`)
		if rec := getRecord(t, h, a); rec.Status != "running" || rec.EntryCount != 2 {
			t.Fatalf("after new activity: %+v", rec)
		}
		before := getRecord(t, h, b)
		h.Do(t, "POST", b+"/usage", `{"model":"gpt-4o","tokens_in":1}`)
		after := getRecord(t, h, b)
		if after.Status != "completed" || after.LastActivityAt.Equal(*before.LastActivityAt) || after.TokensIn != 11 {
			t.Fatalf("activity after complete: %+v", after)
		}
		if r := h.Do(t, "POST", b+"/complete", ""); r.Status != 200 {
			t.Fatalf("complete twice: %d", r.Status)
		}
		if r := h.Do(t, "POST", b+"/fail", ""); r.Status != 409 || r.Code() != "session_ended" {
			t.Fatalf("fail after complete: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "POST", "/v1/users/u1/sessions/none/complete", ""); r.Status != 404 {
			t.Fatalf("complete unknown: %d", r.Status)
		}
		if r := h.Do(t, "POST", a+"/fail", ""); r.Status != 200 || !strings.Contains(r.Body, `"status":"failed"`) {
			t.Fatalf("fail: %d %s", r.Status, r.Body)
		}
		var stats struct {
			Sessions    map[string]int64 `json:"sessions"`
			SuccessRate float64          `json:"success_rate"`
		}
		h.Do(t, "GET", "/v1/sessions/stats", "").JSON(t, &stats)
		if stats.Sessions["completed"] != 1 || stats.Sessions["failed"] != 1 || stats.Sessions["running"] != 0 || stats.SuccessRate != 0.5 {
			t.Fatalf("stats: %+v", stats)
		}
	})
}

func TestUsageSumsExactUnderConcurrency(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const goroutines, posts = 16, 25
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range posts {
					model := []string{"gpt-4o", "claude-sonnet-4", "my-local-model"}[i%3]
					body := fmt.Sprintf(`{"model":%q,"tokens_in":%d,"tokens_out":%d,"cost_usd":0.001,"error":%v}`, model, g+1, i+1, i%5 == 0)
					if r := h.Do(t, "POST", "/v1/users/u1/sessions/s/usage", body); r.Status != 201 {
						t.Errorf("usage: %d %s", r.Status, r.Body)
						return
					}
				}
			})
		}
		wg.Wait()
		var wantIn, wantOut int64
		for g := range goroutines {
			for i := range posts {
				wantIn += int64(g + 1)
				wantOut += int64(i + 1)
			}
		}
		rec := getRecord(t, h, "/v1/users/u1/sessions/s")
		calls := int64(goroutines * posts)
		if rec.TokensIn != wantIn || rec.TokensOut != wantOut || rec.Calls != calls || rec.ErrorCount != goroutines*5 {
			t.Fatalf("sums: in %d/%d out %d/%d calls %d/%d errors %d", rec.TokensIn, wantIn, rec.TokensOut, wantOut, rec.Calls, calls, rec.ErrorCount)
		}
		if want := float64(calls) * 0.001; math.Abs(rec.CostUSD-want) > 1e-12 {
			t.Fatalf("cost %v, want exactly %v", rec.CostUSD, want)
		}
		var sumModels int64
		for _, m := range rec.Models {
			sumModels += m.TokensIn
		}
		if len(rec.Models) != 3 || sumModels != wantIn {
			t.Fatalf("per-model: %+v", rec.Models)
		}
		var byModel struct {
			Models []struct {
				Model string `json:"model"`
				Calls int64  `json:"calls"`
			} `json:"models"`
		}
		h.Do(t, "GET", "/v1/sessions/cost-by-model", "").JSON(t, &byModel)
		var total int64
		for _, m := range byModel.Models {
			total += m.Calls
		}
		if len(byModel.Models) != 3 || total != calls {
			t.Fatalf("cost by model: %+v", byModel)
		}
	})
}

func TestTokenEstimateAndPrices(t *testing.T) {
	srv := redisstoretest.New(t)
	h := start(t, srv, nil)
	p := "/v1/users/u1/sessions/s/usage"
	// 12 characters (14 bytes) -> 3 tokens; 7 characters -> 1.
	r := h.Do(t, "POST", p, `{"model":"gpt-4o-mini-2024-07-18","input_text":"héllo wörld!","output_text":"1234567"}`)
	var res struct {
		PricedAs        *string `json:"priced_as"`
		TokensIn        int64   `json:"tokens_in"`
		TokensOut       int64   `json:"tokens_out"`
		TokensEstimated bool    `json:"tokens_estimated"`
		CostUSD         float64 `json:"cost_usd"`
		CostSource      string  `json:"cost_source"`
	}
	r.JSON(t, &res)
	wantCost, family, _ := pricing.Default().Cost("gpt-4o-mini-2024-07-18", 3, 1)
	if r.Status != 201 || res.TokensIn != 3 || res.TokensOut != 1 || !res.TokensEstimated ||
		res.CostSource != "price_table" || res.PricedAs == nil || *res.PricedAs != family || res.CostUSD != wantCost {
		t.Fatalf("estimate: %d %s (want cost %v as %s)", r.Status, r.Body, wantCost, family)
	}
	// Explicit counts win over text; explicit cost wins over the table.
	h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":100,"input_text":"ignored text","cost_usd":0.5}`).JSON(t, &res)
	if res.TokensIn != 100 || res.TokensEstimated || res.CostUSD != 0.5 || res.CostSource != "explicit" {
		t.Fatalf("explicit: %+v", res)
	}
	// An unknown model with no cost: 0, and a counted warning.
	h.Do(t, "POST", p, `{"model":"acme-llm-9","tokens_in":1000}`).JSON(t, &res)
	if res.CostUSD != 0 || res.CostSource != "unknown_model" || res.PricedAs != nil {
		t.Fatalf("unknown model: %+v", res)
	}
	m := sidecartest.Do(t, "GET", h.Ops+"/metrics", "").Body
	for _, want := range []string{
		"sidecar_llm_unpriced_calls_total 1",
		`sidecar_llm_tokens_total{model="other",token_type="input"} 1000`,
		`sidecar_llm_estimated_tokens_total{model="` + family + `",token_type="input"} 3`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(m, "acme-llm-9") {
		t.Error("an unknown model name became a label")
	}
}

func TestIdempotentUsage(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		p := "/v1/users/u1/sessions/s/usage"
		first := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":7}`, "Idempotency-Key", "call-1")
		again := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":999}`, "Idempotency-Key", "call-1")
		if first.Status != 201 || again.Status != 200 || again.Body != first.Body {
			t.Fatalf("retry: %d %s / %d %s", first.Status, first.Body, again.Status, again.Body)
		}
		h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":3,"request_id":"call-2"}`)
		if r := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":3,"request_id":"call-2"}`); r.Status != 200 {
			t.Fatalf("request_id retry: %d", r.Status)
		}
		if rec := getRecord(t, h, "/v1/users/u1/sessions/s"); rec.TokensIn != 10 || rec.Calls != 2 {
			t.Fatalf("counted %d tokens in %d calls, want 10 in 2", rec.TokensIn, rec.Calls)
		}
		// The key is per session.
		if r := h.Do(t, "POST", "/v1/users/u1/sessions/other/usage", `{"model":"gpt-4o","tokens_in":1}`, "Idempotency-Key", "call-1"); r.Status != 201 {
			t.Fatalf("same key, other session: %d", r.Status)
		}
	})
}

func TestBadInputIs400AndWritesNothing(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		p := "/v1/users/u1/sessions/s/usage"
		tests := []struct {
			name, method, path, body string
			header                   []string
		}{
			{"negative tokens", "POST", p, `{"model":"gpt-4o","tokens_in":-1}`, nil},
			{"fractional tokens", "POST", p, `{"model":"gpt-4o","tokens_out":1.5}`, nil},
			{"tokens as string", "POST", p, `{"model":"gpt-4o","tokens_in":"5"}`, nil},
			{"negative cost", "POST", p, `{"model":"gpt-4o","cost_usd":-0.01}`, nil},
			{"cost as string", "POST", p, `{"model":"gpt-4o","cost_usd":"1"}`, nil},
			{"no model", "POST", p, `{"tokens_in":5}`, nil},
			{"blank model", "POST", p, `{"model":"  "}`, nil},
			{"model with tab", "POST", p, `{"model":"a\tb"}`, nil},
			{"unknown field", "POST", p, `{"model":"gpt-4o","tokens":5}`, nil},
			{"error as string", "POST", p, `{"model":"gpt-4o","error":"yes"}`, nil},
			{"bad key", "POST", p, `{"model":"gpt-4o"}`, []string{"Idempotency-Key", "has space"}},
			{"key and request_id differ", "POST", p, `{"model":"gpt-4o","request_id":"b"}`, []string{"Idempotency-Key", "a"}},
			{"unknown status", "GET", "/v1/sessions?status=paused", ``, nil},
			{"limit 0", "GET", "/v1/sessions?limit=0", ``, nil},
			{"limit 501", "GET", "/v1/users/u1/sessions?limit=501", ``, nil},
			{"bad cursor", "GET", "/v1/sessions?cursor=not-a-cursor", ``, nil},
			{"forged cursor", "GET", "/v1/sessions?cursor=" + url.QueryEscape("eHl6"), ``, nil},
			{"bad user", "GET", "/v1/users/a:b/sessions", ``, nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := h.Do(t, tc.method, tc.path, tc.body, tc.header...)
				if r.Status != 400 || r.Code() == "" {
					t.Fatalf("got %d %s, want 400 with the envelope", r.Status, r.Body)
				}
			})
		}
		// Every listing answers a cursor it did not make alike.
		for _, q := range []string{"/v1/sessions?cursor=not-a-cursor", "/v1/users/u1/sessions?cursor=eHl6",
			"/v1/users/u1/sessions?metadata.k=v&cursor=eHl6", "/v1/sessions?status=running&cursor=" + sidecar.EncodeCursor("x", "u1:s")} {
			if r := h.Do(t, "GET", q, ""); r.Status != 400 || r.Code() != "invalid_cursor" {
				t.Errorf("GET %s: %s, want 400 invalid_cursor", q, r)
			}
		}
		if r := h.Do(t, "GET", "/v1/users/u1/sessions/s", ""); r.Status != 404 {
			t.Fatalf("session after rejected posts: %d %s, want 404", r.Status, r.Body)
		}
		if n := srv.DBSize(t); n != 0 {
			t.Fatalf("%d keys written by rejected requests", n)
		}
	})
}

func TestListingPagesMostRecentFirst(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		for i := range 7 {
			h.Do(t, "POST", fmt.Sprintf("/v1/users/alice/sessions/s%d/entries", i), `{"question":"q","answer":"a"}`)
		}
		// Ending a session is activity: s1 then s4 become the most recent,
		// and the any-status listing merges the running and completed sets.
		h.Do(t, "POST", "/v1/users/alice/sessions/s1/complete", "")
		h.Do(t, "POST", "/v1/users/alice/sessions/s4/fail", "")
		for i := range 3 {
			h.Do(t, "POST", fmt.Sprintf("/v1/users/bob/sessions/b%d/usage", i), `{"model":"gpt-4o"}`)
		}
		var got []string
		cursor := ""
		for range 10 {
			var p page
			r := h.Do(t, "GET", "/v1/users/alice/sessions?limit=3"+cursor, "")
			r.JSON(t, &p)
			for _, s := range p.Sessions {
				if s.UserID != "alice" {
					t.Fatalf("bob's session in alice's list: %+v", s)
				}
				got = append(got, s.SessionID)
			}
			if p.NextCursor == nil {
				break
			}
			cursor = "&cursor=" + url.QueryEscape(*p.NextCursor)
		}
		if want := "s4 s1 s6 s5 s3 s2 s0"; strings.Join(got, " ") != want {
			t.Fatalf("pages gave %v, want %s", got, want)
		}
		var all page
		h.Do(t, "GET", "/v1/sessions?limit=500", "").JSON(t, &all)
		if len(all.Sessions) != 10 || all.Sessions[0].SessionID != "b2" || all.NextCursor != nil {
			t.Fatalf("global list: %d sessions, first %+v", len(all.Sessions), all.Sessions[0])
		}

		// Deleting a session removes it from every index in the same script.
		if r := h.Do(t, "DELETE", "/v1/users/alice/sessions/s3", ""); r.Status != 204 {
			t.Fatalf("delete: %d", r.Status)
		}
		h.Do(t, "GET", "/v1/sessions?limit=500", "").JSON(t, &all)
		if len(all.Sessions) != 9 {
			t.Fatalf("%d sessions listed after a delete, want 9", len(all.Sessions))
		}
		c := srv.Client(t)
		for _, k := range srv.Layout().UserIndex("alice") {
			if n, _ := c.Do(t.Context(), c.B().Zscore().Key(k).Member("s3").Build()).AsFloat64(); n != 0 {
				t.Fatalf("s3 still in %s", k)
			}
		}
	})
}

// Sessions whose keys Redis expired leave the indexes on the next read.
func TestExpiredSessionsLeaveTheIndexes(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "1"})
		h.Do(t, "POST", "/v1/users/u1/sessions/short/entries", `{"question":"q","answer":"a"}`)
		advance(t, srv, 2100*time.Millisecond)
		c := srv.Client(t)
		c.Do(t.Context(), c.B().Get().Key("touch-to-expire").Build())
		var stats struct {
			Sessions map[string]int64 `json:"sessions"`
		}
		h.Do(t, "GET", "/v1/sessions/stats", "").JSON(t, &stats)
		if stats.Sessions["total"] != 0 {
			t.Fatalf("expired session still counted: %+v", stats.Sessions)
		}
		var p page
		h.Do(t, "GET", "/v1/users/u1/sessions", "").JSON(t, &p)
		if len(p.Sessions) != 0 {
			t.Fatalf("expired session listed: %+v", p.Sessions)
		}
	})
}

// A session only Cognee wrote (its list, no record) reads as running with
// entry_count and last_activity_at from its list.
func TestCogneeOnlySessionReadsAsRunning(t *testing.T) {
	srv := redisstoretest.New(t)
	h := start(t, srv, nil)
	c := srv.Client(t)
	entry, err := os.ReadFile("../cognee/testdata/cognee_qa_entry_old.json")
	if err != nil {
		t.Fatal(err)
	}
	nowT := time.Now().UTC().Truncate(time.Microsecond)
	now := nowT.Format("2006-01-02T15:04:05.000000")
	fresh := strings.Replace(string(entry), "2026-01-02T03:04:05", now, 1)
	key := redisstore.Layout{}.Session("u1", "cg").Entries
	c.Do(t.Context(), c.B().Rpush().Key(key).Element(string(entry), fresh).Build())
	c.Do(t.Context(), c.B().Expire().Key(key).Seconds(600).Build())
	rec := getRecord(t, h, "/v1/users/u1/sessions/cg")
	if rec.Status != "running" || rec.EntryCount != 2 || rec.LastActivityAt == nil || !rec.LastActivityAt.Equal(nowT) || !rec.DerivedFromList || *rec.TTLSeconds <= 0 {
		t.Fatalf("Cognee-only session: %+v", rec)
	}
	if r := h.Do(t, "GET", "/v1/users/u1/sessions/none", ""); r.Status != 404 {
		t.Fatalf("unknown session: %d", r.Status)
	}
}
