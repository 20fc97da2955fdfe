package messages_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// BenchmarkFork forks a path of 10 000 messages (SESSION_MAX_MESSAGES's
// default) of 12 words drawn (Zipf) from 3 000 words, over HTTP to a real
// host and redis-server: "indexed" answers once the copies are in the
// search index, "unindexed" with SEARCH_INDEX=false (the copy alone);
// redis-ms/fork is Redis's own time in the scripts and reads.
func BenchmarkFork(b *testing.B) {
	for _, kind := range []string{"indexed", "unindexed"} {
		b.Run(kind, func(b *testing.B) {
			srv := redisstoretest.NewReal(b)
			env := envconf.Env{}
			if kind == "unindexed" {
				env["SEARCH_INDEX"] = "false"
			}
			h := sidecartest.Start(b, srv, env, messagesModules()...)
			cl := sidecartest.NewClient(b, h.API)
			zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 1)), 1.1, 2, 2999)
			const n = 10000
			for from := 0; from < n; from += 100 {
				var batch []string
				for m := from; m < from+100; m++ {
					var ws []string
					for range 12 {
						ws = append(ws, fmt.Sprintf("w%dx", zipf.Uint64()))
					}
					batch = append(batch, fmt.Sprintf(`{"id":"m%d","role":"user","content":%q}`, m, strings.Join(ws, " ")))
				}
				if rep := cl.Send(b.Context(), "POST", "/v1/users/u/sessions/s/messages", `{"messages":[`+strings.Join(batch, ",")+`]}`); rep.Status != 201 {
					b.Fatal(rep)
				}
			}
			c := srv.Client(b)
			resetStats(b, c)
			i := 0
			var took time.Duration
			for b.Loop() {
				start := time.Now()
				rep := cl.Send(b.Context(), "POST", "/v1/users/u/sessions/s/fork", fmt.Sprintf(`{"at":"m%d","session_id":"f%d"}`, n-1, i))
				took += time.Since(start)
				if rep.Status != 201 {
					b.Fatal(rep)
				}
				i++
			}
			b.ReportMetric(float64(took.Milliseconds())/float64(i), "ms/fork")
			redis := 0.0
			for _, cmd := range []string{"evalsha", "eval", "hmget"} {
				redis += float64(calls(b, c, cmd)) * usecPerCall(b, c, cmd)
			}
			b.ReportMetric(redis/1000/float64(i), "redis-ms/fork")
		})
	}
}
