package erasure_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// BenchmarkEraseUser erases a user of 100 sessions (an entry, a trace, two
// messages, metadata and usage each) from a redis-server holding 200 000
// other keys (DEBUG POPULATE), one step per call, and reports what Redis
// spent: the steps, the median, 99th percentile and slowest step and all
// steps together (SLOWLOG with a threshold of 0, so every FCALL is logged
// with its duration: wall time inside Redis, so a loaded machine's
// descheduling shows in the slowest).
//
//	REQUIRE_REAL_REDIS=1 go test ./erasure -run '^$' -bench EraseUser -benchtime 3x
func BenchmarkEraseUser(b *testing.B) {
	srv := redisstoretest.NewReal(b, "--enable-debug-command", "yes")
	h := start(b, srv, envconf.Env{"USER_ERASE_STEPS_PER_CALL": "1"})
	c := srv.Client(b)
	ctx := b.Context()
	do := func(args ...string) {
		if err := c.Do(ctx, c.B().Arbitrary(args...).Build()).Error(); err != nil {
			b.Fatal(args, err)
		}
	}
	do("DEBUG", "POPULATE", "200000", "other")
	do("CONFIG", "SET", "slowlog-max-len", "100000")
	var steps, maxUS, sumUS int64
	var durs []int64
	for b.Loop() {
		b.StopTimer()
		for i := range 100 {
			s := "/v1/users/alice/sessions/s" + strconv.Itoa(i)
			ok(b, h, "POST", "/v1/users/alice/sessions", fmt.Sprintf(`{"session_id":"s%d","metadata":{"team":"t%d"}}`, i, i%5))
			ok(b, h, "POST", s+"/entries", `{"question":"where?","answer":"here"}`)
			ok(b, h, "POST", s+"/traces", `{"origin_function":"f","status":"ok"}`)
			ok(b, h, "POST", s+"/messages", `{"messages":[{"id":"m1","role":"user","content":"hi"},{"id":"m2","role":"assistant","content":"hello"}]}`)
			ok(b, h, "POST", s+"/usage", `{"model":"m","tokens_in":1,"tokens_out":1}`)
		}
		do("CONFIG", "SET", "slowlog-log-slower-than", "0")
		do("SLOWLOG", "RESET")
		b.StartTimer()
		for {
			r := h.Do(b, "DELETE", "/v1/users/alice", "")
			if r.Status == http.StatusOK {
				break
			}
			if r.Status != http.StatusAccepted {
				b.Fatal(r)
			}
		}
		b.StopTimer()
		do("CONFIG", "SET", "slowlog-log-slower-than", "10000")
		log, err := c.Do(ctx, c.B().Arbitrary("SLOWLOG", "GET", "100000").Build()).ToArray()
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range log {
			f, err := e.ToArray()
			if err != nil || len(f) < 4 {
				b.Fatal(e, err)
			}
			args, _ := f[3].AsStrSlice()
			if len(args) < 2 || !strings.EqualFold(args[0], "FCALL") || !strings.HasPrefix(args[1], "user_erase") {
				continue
			}
			us, _ := f[2].AsInt64()
			durs = append(durs, us)
			steps++
			sumUS += us
			maxUS = max(maxUS, us)
		}
		// the progress key refuses alice's writes for 30 s: next round, a clean slate
		do("FLUSHALL")
		do("DEBUG", "POPULATE", "200000", "other")
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(steps)/n, "steps/op")
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2]), "p50-step-µs")
	b.ReportMetric(float64(durs[len(durs)*99/100]), "p99-step-µs")
	b.ReportMetric(float64(maxUS), "max-step-µs")
	b.ReportMetric(float64(sumUS)/n, "redis-µs/op")
}
