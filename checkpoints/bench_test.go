package checkpoints_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// BenchmarkStep is one LangGraph super-step over HTTP on a real
// redis-server: a put of a checkpoint with 5 channels of 2 KiB (2 of them
// changed), a putWrites of 3 writes, then getTuple; the thread holds b.N
// checkpoints by the end. And BenchmarkList: a page of 10 of 1 000.
func BenchmarkStep(b *testing.B) {
	srv := redisstoretest.NewReal(b)
	h := start(b, srv, nil)
	val := `"` + strings.Repeat("v", 2048) + `"`
	parent := ""
	resetStats(b, srv)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("c%09d", i)
		values := map[string]string{}
		for ch := range 5 {
			v := fmt.Sprintf("%d", i/(ch+1)+1)
			if ch < 2 {
				v += "=" + val
			}
			values[fmt.Sprintf("ch%d", ch)] = v
		}
		if rep := put(b, h, base, "", id, parent, `{"source":"loop","step":1}`, values); rep.Status != 200 {
			b.Fatalf("put: %d %s", rep.Status, rep.Body)
		}
		if rep := writes(b, h, "", id, "task", "", "0:ch0:1", "1:ch1:2", "2:ch2:3"); rep.Status != 200 {
			b.Fatalf("writes: %d %s", rep.Status, rep.Body)
		}
		if rep := h.Do(b, "GET", base+"/tuple?checkpoint_ns=&checkpoint_id="+id, ""); rep.Status != 200 {
			b.Fatalf("get: %d %s", rep.Status, rep.Body)
		}
		parent = id
	}
	b.StopTimer()
	reportRedis(b, srv)
}

func BenchmarkList(b *testing.B) {
	srv := redisstoretest.NewReal(b)
	h := start(b, srv, nil)
	for i := range 1000 {
		if rep := put(b, h, base, "", fmt.Sprintf("c%09d", i), "", fmt.Sprintf(`{"step":%d}`, i%3), map[string]string{"a": fmt.Sprintf("%d=[%d]", i+1, i)}); rep.Status != 200 {
			b.Fatalf("put: %d %s", rep.Status, rep.Body)
		}
	}
	resetStats(b, srv)
	b.ResetTimer()
	for range b.N {
		if rep := h.Do(b, "GET", base+"?limit=10&filter=%7B%22step%22%3A1%7D", ""); rep.Status != 200 {
			b.Fatalf("list: %d %s", rep.Status, rep.Body)
		}
	}
	b.StopTimer()
	reportRedis(b, srv)
}

func resetStats(b *testing.B, srv *redisstoretest.Server) {
	c := srv.Client(b)
	if err := c.Do(b.Context(), c.B().ConfigResetstat().Build()).Error(); err != nil {
		b.Fatal(err)
	}
}

// reportRedis reports Redis's own time in the scripts per op (FCALL,
// FCALL_RO, EVALSHA, EVAL from INFO commandstats) and the slowest call's
// mean.
func reportRedis(b *testing.B, srv *redisstoretest.Server) {
	c := srv.Client(b)
	info, err := c.Do(b.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var usec, worst float64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !(name == "cmdstat_fcall" || name == "cmdstat_fcall_ro" || name == "cmdstat_evalsha" || name == "cmdstat_eval") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "usec":
				usec += f
			case "usec_per_call":
				worst = max(worst, f)
			}
		}
	}
	b.ReportMetric(usec/float64(b.N), "redis-µs/op")
	b.ReportMetric(worst, "redis-µs/call")
}
