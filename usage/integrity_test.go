package usage_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/client"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// redisDays returns the per-model day keys of user's shard for today and
// yesterday by Redis's clock (a test may straddle midnight UTC).
func redisDays(t *testing.T, srv *redisstoretest.Server, user string) []string {
	t.Helper()
	c := srv.Client(t)
	ts, err := c.Do(t.Context(), c.B().Time().Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	sec, _ := strconv.ParseInt(ts[0], 10, 64)
	now := time.Unix(sec, 0)
	l := srv.Layout()
	g := l.Global(l.Bucket(user))
	return []string{g.ByModelDay(now), g.ByModelDay(now.AddDate(0, 0, -1))}
}

// usageKeys are every key a usage post of (user, session) may write.
func usageKeys(t *testing.T, srv *redisstoretest.Server, user, session string) []string {
	t.Helper()
	return append(srv.Layout().Session(user, session).List(), redisDays(t, srv, user)...)
}

// snapshot reads every key in keys by type: what a refused write must
// leave exactly as it was.
func snapshot(t *testing.T, srv *redisstoretest.Server, keys []string) map[string]string {
	t.Helper()
	c := srv.Client(t)
	ctx := t.Context()
	out := map[string]string{}
	for _, k := range keys {
		typ, err := c.Do(ctx, c.B().Type().Key(k).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		switch typ {
		case "none":
			continue
		case "string":
			v, err = c.Do(ctx, c.B().Get().Key(k).Build()).ToString()
		case "hash":
			v, err = c.Do(ctx, c.B().Hgetall().Key(k).Build()).AsStrMap()
		case "list":
			v, err = c.Do(ctx, c.B().Lrange().Key(k).Start(0).Stop(-1).Build()).AsStrSlice()
		case "zset":
			v, err = c.Do(ctx, c.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).AsZScores()
		default:
			t.Fatalf("key %s: unexpected type %s", k, typ)
		}
		if err != nil {
			t.Fatal(err)
		}
		out[k] = fmt.Sprintf("%s %v", typ, v)
	}
	return out
}

func hashOf(t *testing.T, srv *redisstoretest.Server, key string) map[string]string {
	t.Helper()
	c := srv.Client(t)
	h, err := c.Do(t.Context(), c.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func redisDo(t *testing.T, srv *redisstoretest.Server, cmd func(c rueidis.Client) rueidis.Completed) {
	t.Helper()
	c := srv.Client(t)
	if err := c.Do(t.Context(), cmd(c)).Error(); err != nil {
		t.Fatal(err)
	}
}

func num(h map[string]string, k string) int64 {
	n, _ := strconv.ParseInt(h[k], 10, 64)
	return n
}

// A sum that would pass 9e18 is refused before the first write: the
// session's record and the shared totals stay as they were, and the key
// is not remembered, so a retry after the fix counts.
func TestUsageOverflowWritesNothing(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const p = "/v1/users/u1/sessions/s/usage"
		if r := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":10,"cost_usd":1}`); r.Status != 201 {
			t.Fatalf("first post: %d %s", r.Status, r.Body)
		}
		keys := srv.Layout().Session("u1", "s")
		tests := []struct {
			name, key, field string
		}{
			{"session cost", keys.Record, "cost_nano_usd"},
			{"session tokens at int64's edge", keys.Record, "tokens_in"},
			{"session model tokens", keys.Record, "model:gpt-4o:tokens_in"},
			{"all-time totals", keys.Totals, "cost_nano_usd"},
			{"day's model totals", redisDays(t, srv, "u1")[0], "gpt-4o\ttokens_in"},
		}
		// Just under the limit of 9e18, and (tokens_in) just under int64's
		// maximum, where HINCRBY itself fails.
		edge := map[string]string{"tokens_in": "9223372036854775000"}
		for _, tc := range tests {
			if edge[tc.field] == "" {
				edge[tc.field] = "8999999999999999999"
			}
		}
		for i, tc := range tests {
			key := fmt.Sprintf("key-%d", i)
			t.Run(tc.name, func(t *testing.T) {
				redisDo(t, srv, func(c rueidis.Client) rueidis.Completed {
					return c.B().Hset().Key(tc.key).FieldValue().FieldValue(tc.field, edge[tc.field]).Build()
				})
				before := snapshot(t, srv, usageKeys(t, srv, "u1", "s"))
				r := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":1000000,"cost_usd":1000}`, "Idempotency-Key", key)
				if r.Status != 409 || r.Code() != "usage_overflow" || !strings.Contains(r.Body, strings.ReplaceAll(tc.field, "\t", `\t`)) {
					t.Fatalf("got %d %s, want 409 usage_overflow naming %s", r.Status, r.Body, tc.field)
				}
				if after := snapshot(t, srv, usageKeys(t, srv, "u1", "s")); !maps.Equal(before, after) {
					t.Fatalf("a refused post wrote:\n before %v\n after  %v", before, after)
				}
				redisDo(t, srv, func(c rueidis.Client) rueidis.Completed {
					return c.B().Hset().Key(tc.key).FieldValue().FieldValue(tc.field, "1").Build()
				})
				if r := h.Do(t, "POST", p, `{"model":"gpt-4o","tokens_in":1,"cost_usd":1}`, "Idempotency-Key", key); r.Status != 201 {
					t.Fatalf("retry after the fix: %d %s", r.Status, r.Body)
				}
			})
		}
	})
}

// The reproduction: huge token counts priced by the table (o1-pro,
// or a price file's $0.01 per token) are refused like a huge cost_usd,
// never summed into a negative or wrapped total.
func TestTablePricedCostIsCapped(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		file := filepath.Join(t.TempDir(), "prices.json")
		if err := os.WriteFile(file, []byte(`{"dear-model": {"input_cost_per_token": 0.01, "output_cost_per_token": 0.01}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		h := start(t, srv, envconf.Env{"MODEL_PRICES_FILE": file})
		const p = "/v1/users/u1/sessions/s/usage"
		for i := range 14 {
			r := h.Do(t, "POST", p, `{"model":"o1-pro","tokens_out":1099511627776}`, "Idempotency-Key", fmt.Sprintf("k%d", i))
			if r.Status != 400 || r.Code() != "invalid_field" || !strings.Contains(r.Body, "tokens_out") {
				t.Fatalf("post %d: %d %s, want 400 naming tokens_out", i, r.Status, r.Body)
			}
		}
		if r := h.Do(t, "POST", p, `{"model":"dear-model","tokens_in":1099511627776}`); r.Status != 400 {
			t.Fatalf("$0.01 x 2^40 tokens: %d %s, want 400", r.Status, r.Body)
		}
		if n := srv.DBSize(t); n != 0 {
			t.Fatalf("%d keys written by refused posts", n)
		}
		var res client.UsageResult
		r := h.Do(t, "POST", p, `{"model":"dear-model","tokens_in":1000,"tokens_out":500}`)
		r.JSON(t, &res)
		if r.Status != 201 || res.CostUSD != 15 {
			t.Fatalf("1500 tokens at $0.01: %d %s, want cost 15", r.Status, r.Body)
		}
		if rec := hashOf(t, srv, srv.Layout().Session("u1", "s").Record); rec["cost_nano_usd"] != "15000000000" || rec["calls"] != "1" {
			t.Fatalf("record %v", rec)
		}
	})
}

// A key or field the scripts would write, holding the wrong type (someone
// wrote it by hand), is refused before the first write with a 500 that
// names it; the keys stay exactly as they were.
func TestUsageWrongTypeWritesNothing(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const s = "/v1/users/u1/sessions/s"
		k := srv.Layout().Session("u1", "s")
		set := func(key string) func(c rueidis.Client) rueidis.Completed {
			return func(c rueidis.Client) rueidis.Completed { return c.B().Set().Key(key).Value("x").Build() }
		}
		field := func(key, f string) func(c rueidis.Client) rueidis.Completed {
			return func(c rueidis.Client) rueidis.Completed {
				return c.B().Hset().Key(key).FieldValue().FieldValue(f, "not a number").Build()
			}
		}
		day := redisDays(t, srv, "u1")[0]
		// Which of the two writes (a usage post, complete) writes the key,
		// and so is refused. A running session's usage post does not touch
		// the completed index; complete does not touch the usage sums. A
		// post within the grain of the session's last bookkeeping writes no
		// lifecycle index (the running and expiry sets: complete does), and
		// neither write reads Cognee's entries list of a started session.
		tests := []struct {
			name      string
			corrupt   func(c rueidis.Client) rueidis.Completed
			want      string
			post, end bool
		}{
			{"totals a string", set(k.Totals), k.Totals, true, false},
			{"usage ids a string", set(k.Usage), k.Usage, true, false},
			{"day totals a string", set(day), day, true, false},
			{"record tokens not a number", field(k.Record, "tokens_in"), "tokens_in", true, false},
			{"running index a string", set(k.UserIndex[0]), k.UserIndex[0], false, true},
			{"global completed index a string", set(k.GlobalIndex[1]), k.GlobalIndex[1], false, true},
			{"expiry set a string", set(k.Expiry), k.Expiry, false, true},
			{"record ttl not a number", field(k.Record, "ttl_seconds"), "ttl_seconds", true, true},
			{"record status not a status", func(c rueidis.Client) rueidis.Completed {
				return c.B().Hset().Key(k.Record).FieldValue().FieldValue("status", "paused").Build()
			}, "status", true, true},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				if r := h.Do(t, "POST", s+"/usage", `{"model":"gpt-4o","tokens_in":5}`); r.Status != 201 && r.Status != 200 {
					t.Fatalf("set-up post: %d %s", r.Status, r.Body)
				}
				redisDo(t, srv, tc.corrupt)
				before := snapshot(t, srv, usageKeys(t, srv, "u1", "s"))
				var calls []struct{ path, body string }
				if tc.post {
					calls = append(calls, struct{ path, body string }{s + "/usage", `{"model":"gpt-4o","tokens_in":7}`})
				}
				if tc.end {
					calls = append(calls, struct{ path, body string }{s + "/complete", ""})
				}
				for _, call := range calls {
					r := h.Do(t, "POST", call.path, call.body, "Idempotency-Key", "wrong-type")
					if r.Status != 409 || r.Code() != "key_wrong_type" || !strings.Contains(r.Body, tc.want) {
						t.Fatalf("POST %s: %d %s, want 409 key_wrong_type naming %s", call.path, r.Status, r.Body, tc.want)
					}
				}
				if after := snapshot(t, srv, usageKeys(t, srv, "u1", "s")); !maps.Equal(before, after) {
					t.Fatalf("a refused write wrote:\n before %v\n after  %v", before, after)
				}
				for _, key := range usageKeys(t, srv, "u1", "s") {
					redisDo(t, srv, func(c rueidis.Client) rueidis.Completed { return c.B().Del().Key(key).Build() })
				}
			})
		}
	})
}

// After a random sequence of usage posts (repeated idempotency keys, bad
// input, huge values, sums driven past the limit, more model names than
// the caps), every record's sums equal the sums of the calls it counted
// (and of its per-model rows), and the shared totals equal the sums over
// the sessions.
func TestUsageInvariantsAfterRandomPosts(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"USAGE_MAX_MODELS_PER_SESSION": "3", "USAGE_MAX_MODELS_PER_DAY": "4"})
		rng := rand.New(rand.NewPCG(1, 2))
		type session struct{ user, id string }
		var sessions []session
		for u := range 3 {
			for s := range 2 {
				sessions = append(sessions, session{fmt.Sprintf("user%d", u), fmt.Sprintf("s%d", s)})
			}
		}
		models := []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "o1-pro", "local-a", "local-b", "local-c", "other"}
		type sums struct{ in, out, nano, calls, errors int64 }
		want := map[session]*sums{}
		seed := map[session]int64{} // tokens_out written by hand before the run
		answers := map[session]map[string]string{}
		for _, s := range sessions {
			want[s] = &sums{}
			answers[s] = map[string]string{}
		}
		// One session starts near the limit, so huge posts to it overflow.
		near := sessions[1]
		seed[near] = 9e18 - 3*(1<<40)
		redisDo(t, srv, func(c rueidis.Client) rueidis.Completed {
			return c.B().Hset().Key(srv.Layout().Session(near.user, near.id).Record).FieldValue().
				FieldValue("tokens_out", strconv.FormatInt(seed[near], 10)).Build()
		})
		counts := map[int]int{}
		for i := range 400 {
			s := sessions[rng.IntN(len(sessions))]
			model := models[rng.IntN(len(models))]
			in, out := rng.Int64N(5000), rng.Int64N(5000)
			if rng.IntN(8) == 0 {
				out = 1 << 40 // huge, but allowed for an unpriced model with its own cost
				model = "local-a"
			}
			body := fmt.Sprintf(`{"model":%q,"tokens_in":%d,"tokens_out":%d,"error":%v`, model, in, out, rng.IntN(4) == 0)
			switch rng.IntN(4) {
			case 0:
				body += fmt.Sprintf(`,"cost_usd":%g`, float64(rng.IntN(1_000_000_000))/1e6)
			case 1:
				body += `,"input_text":"x"`
			}
			if rng.IntN(10) == 0 {
				body += `,"tokens_in":-1` // duplicate, bad field: 400
			}
			body += "}"
			var header []string
			key := ""
			if rng.IntN(2) == 0 {
				key = fmt.Sprintf("key%d", rng.IntN(40))
				header = []string{"Idempotency-Key", key}
			}
			r := h.Do(t, "POST", "/v1/users/"+s.user+"/sessions/"+s.id+"/usage", body, header...)
			counts[r.Status]++
			switch r.Status {
			case 201:
				var res client.UsageResult
				r.JSON(t, &res)
				w := want[s]
				w.in += res.TokensIn
				w.out += res.TokensOut
				w.nano += int64(res.CostUSD*1e9 + 0.5)
				w.calls++
				if res.Error {
					w.errors++
				}
				if key != "" {
					answers[s][key] = r.Body
				}
			case 200:
				if first, ok := answers[s][key]; !ok || first != r.Body {
					t.Fatalf("post %d: 200 %s for key %q, first answer %q", i, r.Body, key, first)
				}
			case 400, 409:
			default:
				t.Fatalf("post %d: %d %s", i, r.Status, r.Body)
			}
		}
		if counts[201] < 100 || counts[200] < 10 || counts[400] < 10 || counts[409] < 1 {
			t.Fatalf("the sequence missed a case: answers by status %v", counts)
		}
		l := srv.Layout()
		totals := map[string]*sums{}
		for _, s := range sessions {
			rec := hashOf(t, srv, l.Session(s.user, s.id).Record)
			w := want[s]
			got := sums{num(rec, "tokens_in"), num(rec, "tokens_out") - seed[s], num(rec, "cost_nano_usd"), num(rec, "calls"), num(rec, "error_count")}
			if got != *w {
				t.Errorf("%v: record sums %+v, counted calls sum to %+v", s, got, *w)
			}
			var per sums
			var names []string
			for f, v := range rec {
				rest, ok := strings.CutPrefix(f, "model:")
				if !ok {
					continue
				}
				n, _ := strconv.ParseInt(v, 10, 64)
				switch {
				case strings.HasSuffix(rest, ":tokens_in"):
					per.in += n
					names = append(names, strings.TrimSuffix(rest, ":tokens_in"))
				case strings.HasSuffix(rest, ":tokens_out"):
					per.out += n
				case strings.HasSuffix(rest, ":cost_nano_usd"):
					per.nano += n
				}
			}
			if per.in != w.in || per.out != w.out || per.nano != w.nano {
				t.Errorf("%v: per-model rows sum to %+v, want %+v", s, per, *w)
			}
			if len(names) > 4 || (len(names) == 4 && !slices.Contains(names, "other")) {
				t.Errorf("%v: %d model rows %v, want at most 3 names and other", s, len(names), names)
			}
			g := l.Global(l.Bucket(s.user))
			if totals[g.Totals] == nil {
				totals[g.Totals] = &sums{}
			}
			tt := totals[g.Totals]
			tt.in, tt.out, tt.nano, tt.calls, tt.errors = tt.in+w.in, tt.out+w.out, tt.nano+w.nano, tt.calls+w.calls, tt.errors+w.errors
		}
		var all, days sums
		for key, w := range totals {
			th := hashOf(t, srv, key)
			if got := (sums{num(th, "tokens_in"), num(th, "tokens_out"), num(th, "cost_nano_usd"), num(th, "calls"), num(th, "errors")}); got != *w {
				t.Errorf("%s: %+v, sessions sum to %+v", key, got, *w)
			}
			all.calls += w.calls
			all.nano += w.nano
		}
		seen := map[string]bool{}
		for _, s := range sessions {
			for _, key := range redisDays(t, srv, s.user) {
				if seen[key] {
					continue
				}
				seen[key] = true
				dh := hashOf(t, srv, key)
				names := 0
				for f, v := range dh {
					_, field, ok := strings.Cut(f, "\t")
					n, _ := strconv.ParseInt(v, 10, 64)
					switch {
					case !ok:
					case field == "calls":
						days.calls += n
						names++
					case field == "cost_nano_usd":
						days.nano += n
					}
				}
				if names > 5 || num(dh, "#models") > 4 {
					t.Errorf("%s: %d model names (#models %s), want at most 4 and other", key, names, dh["#models"])
				}
			}
		}
		if days.calls != all.calls || days.nano != all.nano {
			t.Errorf("day totals by model %+v, sessions sum to %+v", days, all)
		}
	})
}

// The answer's cost is the integer the record sums: 100 gpt-4o-mini input
// tokens at $0.15/M are 0.000015, not the float product 1.4999999999999999e-05.
func TestUsageAnswerCostIsTheRecordedAmount(t *testing.T) {
	srv := redisstoretest.New(t)
	h := start(t, srv, nil)
	r := h.Do(t, "POST", "/v1/users/u1/sessions/s/usage", `{"model":"gpt-4o-mini","tokens_in":100}`)
	if r.Status != 201 || !strings.Contains(r.Body, `"cost_usd":0.000015,`) {
		t.Fatalf("answer %d %s, want cost_usd 0.000015", r.Status, r.Body)
	}
	if rec := hashOf(t, srv, redisstore.Layout{}.Session("u1", "s").Record); rec["cost_nano_usd"] != "15000" {
		t.Fatalf("record cost_nano_usd %q, want 15000", rec["cost_nano_usd"])
	}
	if rec := getRecord(t, h, "/v1/users/u1/sessions/s"); rec.CostUSD != 0.000015 {
		t.Fatalf("record cost_usd %v", rec.CostUSD)
	}
}
