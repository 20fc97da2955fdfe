package sessionstore

import (
	"context"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/redis/rueidis"
)

// Stats are operator summaries: sessions by (derived) status now, and the
// all-time usage totals.
type Stats struct {
	Running, Abandoned, Completed, Failed int64
	TokensIn, TokensOut, CostNanoUSD      int64
	Calls, Errors                         int64
}

// Stats counts sessions by status (O(log n): counts of sorted-set ranges)
// and reads the usage totals.
func (s *Store) Stats(ctx context.Context, abandonAfter time.Duration) (Stats, error) {
	client, err := s.conn.Client()
	if err != nil {
		return Stats{}, err
	}
	now, err := s.sweep(ctx, client)
	if err != nil {
		return Stats{}, err
	}
	l := s.layout()
	cutoff := strconv.FormatInt(now-abandonAfter.Microseconds(), 10)
	var cmds rueidis.Commands
	for b := range l.Buckets() {
		g := l.Global(b)
		cmds = append(cmds,
			client.B().Zcount().Key(g.Index[0]).Min(cutoff).Max("+inf").Build(),
			client.B().Zcount().Key(g.Index[0]).Min("-inf").Max("("+cutoff).Build(),
			client.B().Zcard().Key(g.Index[1]).Build(),
			client.B().Zcard().Key(g.Index[2]).Build(),
			client.B().Hgetall().Key(g.Totals).Build(),
		)
	}
	res := client.DoMulti(ctx, cmds...)
	var st Stats
	for i := 0; i < len(res); i += 5 {
		for j, p := range []*int64{&st.Running, &st.Abandoned, &st.Completed, &st.Failed} {
			n, err := res[i+j].AsInt64()
			if err != nil {
				return Stats{}, redisstore.Wrap("session stats", err)
			}
			*p += n
		}
		h, err := res[i+4].AsStrMap()
		if err != nil {
			return Stats{}, redisstore.Wrap("session stats", err)
		}
		num := func(k string) int64 { n, _ := strconv.ParseInt(h[k], 10, 64); return n }
		st.TokensIn += num("tokens_in")
		st.TokensOut += num("tokens_out")
		st.CostNanoUSD += num("cost_nano_usd")
		st.Calls += num("calls")
		st.Errors += num("errors")
	}
	return st, nil
}

// ModelTotals is one model's usage over a window of days.
type ModelTotals struct {
	Model                            string
	TokensIn, TokensOut, CostNanoUSD int64
	Calls, Errors                    int64
}

// CostByModel returns the usage per model of the last days UTC days (today
// included, by Redis's clock), most expensive first. Each day's hash is
// bounded (USAGE_MAX_MODELS_PER_DAY names, then "other"), so a call reads at
// most days × Buckets() bounded hashes.
func (s *Store) CostByModel(ctx context.Context, days int) ([]ModelTotals, error) {
	now, err := s.Now(ctx)
	if err != nil {
		return nil, err
	}
	client, err := s.conn.Client()
	if err != nil {
		return nil, err
	}
	l := s.layout()
	today := time.UnixMicro(now).UTC()
	cmds := make(rueidis.Commands, 0, l.Buckets()*days)
	for b := range l.Buckets() {
		g := l.Global(b)
		for d := range days {
			cmds = append(cmds, client.B().Hgetall().Key(g.ByModelDay(today.AddDate(0, 0, -d))).Build())
		}
	}
	by := map[string]*ModelTotals{}
	for _, r := range client.DoMulti(ctx, cmds...) {
		h, err := r.AsStrMap()
		if err != nil {
			return nil, redisstore.Wrap("cost by model", err)
		}
		for k, v := range h {
			model, field, ok := strings.Cut(k, "\t")
			if !ok {
				continue
			}
			m := by[model]
			if m == nil {
				m = &ModelTotals{Model: model}
				by[model] = m
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			switch field {
			case "tokens_in":
				m.TokensIn += n
			case "tokens_out":
				m.TokensOut += n
			case "cost_nano_usd":
				m.CostNanoUSD += n
			case "calls":
				m.Calls += n
			case "errors":
				m.Errors += n
			}
		}
	}
	out := make([]ModelTotals, 0, len(by))
	for _, m := range by {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CostNanoUSD != out[j].CostNanoUSD {
			return out[i].CostNanoUSD > out[j].CostNanoUSD
		}
		return out[i].Model < out[j].Model
	})
	return out, nil
}

// MaxNanoUSD is the largest amount NanoUSD returns (int64's maximum).
const MaxNanoUSD = math.MaxInt64

// NanoUSD converts dollars to the integer nano-dollars the records sum,
// clamped to [0, MaxNanoUSD]: a float too large for int64 would otherwise
// convert to a negative number (NaN counts as 0).
func NanoUSD(usd float64) int64 {
	n := math.Round(usd * 1e9)
	switch {
	case !(n > 0): // also NaN
		return 0
	case n >= math.MaxInt64: // 2^63 as a float: the first value that does not fit
		return MaxNanoUSD
	}
	return int64(n)
}

// USD converts nano-dollars back to dollars.
func USD(nano int64) float64 { return float64(nano) / 1e9 }
