package messages_test

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// BenchmarkSearchUser: one user with 500 sessions × 40 messages of 12
// words drawn (Zipf) from 3 000 words; GET /v1/users/{u}/search for two
// words, over HTTP to a real host and redis-server; p50 and p99 reported.
func BenchmarkSearchUser(b *testing.B) {
	srv := redisstoretest.NewReal(b)
	h := sidecartest.Start(b, srv, nil, messagesModules()...)
	cl := sidecartest.NewClient(b, h.API)
	rng := rand.New(rand.NewPCG(7, 7))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 1)), 1.1, 2, 2999)
	word := func() string { return fmt.Sprintf("w%dx", zipf.Uint64()) }
	for s := range 500 {
		var batch []string
		for m := range 40 {
			var ws []string
			for range 12 {
				ws = append(ws, word())
			}
			batch = append(batch, fmt.Sprintf(`{"id":"m%d","role":"user","content":%q}`, m, strings.Join(ws, " ")))
		}
		rep := cl.Send(b.Context(), "POST", fmt.Sprintf("/v1/users/u/sessions/s%d/messages", s), `{"messages":[`+strings.Join(batch, ",")+`]}`)
		if rep.Status != 201 {
			b.Fatal(rep)
		}
	}
	var took []time.Duration
	for b.Loop() {
		q := url.QueryEscape(fmt.Sprintf("w%dx w%dx", rng.IntN(50), rng.IntN(3000)))
		start := time.Now()
		rep := cl.Send(b.Context(), "GET", "/v1/users/u/search?q="+q, "")
		took = append(took, time.Since(start))
		if rep.Status != 200 {
			b.Fatal(rep)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
