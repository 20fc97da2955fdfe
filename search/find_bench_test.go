package search

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// BenchmarkFind: a user-wide search over 500 sessions of 40 messages (30
// words each, drawn from 5 000 by Zipf's law, as the index stores them) on
// a real redis-server, by kind of query: p50/p99 of the call, and Redis's
// commands and time per search (INFO commandstats). BENCHMARKS.md,
// "Relevance search: the query side".
func BenchmarkFind(b *testing.B) {
	srv := redisstoretest.NewReal(b)
	f := newFixture(b, srv)
	f.x.RegisterTexts("message", func(_ context.Context, _, _ string, ids []string) (map[string][]string, error) {
		out := make(map[string][]string, len(ids))
		for _, id := range ids {
			out[id] = []string{"a text of thirty words or so for " + id}
		}
		return out, nil
	})
	const sessions, perSession, words, vocabulary = 500, 40, 30, 5000
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, vocabulary-1)
	for s := range sessions {
		sid := "s" + strconv.Itoa(s)
		var docs []fdoc
		for m := 1; m <= perSession; m++ {
			terms := map[string]int{}
			for range words {
				terms["w"+strconv.FormatUint(zipf.Uint64(), 10)]++
			}
			docs = append(docs, fdoc{sid, "message", m, t0 + int64(s*perSession+m), sid + "m" + strconv.Itoa(m), terms})
		}
		f.write(b, "u", map[string]int64{sid: int64(s)}, docs...)
	}
	for _, c := range []struct{ name, q string }{
		{"common", "w0"},  // in most messages: the newest 2 000 postings
		{"middle", "w60"}, // in a few hundred
		{"rare", "w3000"}, // in a handful: every session read
		{"three", "w0 w60 w3000"},
	} {
		b.Run(c.name, func(b *testing.B) {
			calls0, us0 := commandStats(b, f)
			var durs []time.Duration
			for b.Loop() {
				t := time.Now()
				if _, err := f.x.Find(b.Context(), "u", "", c.q, 10); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(t))
			}
			calls, us := commandStats(b, f)
			n := float64(len(durs))
			slices.Sort(durs)
			b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(calls-calls0-1)/n, "redis-cmds/op")
			b.ReportMetric(float64(us-us0)/n, "redis-µs/op")
		})
	}
}

// commandStats is Redis's commands served and their time (µs) so far.
func commandStats(b *testing.B, f *fixture) (calls, us int64) {
	b.Helper()
	info, err := f.c.Do(b.Context(), f.c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		_, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				n, _ := strconv.ParseInt(v, 10, 64)
				calls += n
			case "usec":
				n, _ := strconv.ParseInt(v, 10, 64)
				us += n
			}
		}
	}
	return calls, us
}
