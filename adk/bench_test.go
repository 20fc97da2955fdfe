package adk_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// redisUsec is Redis's own time in FCALL/FCALL_RO and EVALSHA since the
// last CONFIG RESETSTAT (µs, INFO commandstats).
func redisUsec(b *testing.B, c rueidis.Client) (usec float64, calls int) {
	b.Helper()
	info, err := c.Do(b.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`cmdstat_(fcall|fcall_ro|evalsha):calls=(\d+),usec=(\d+)`).FindAllStringSubmatch(info, -1) {
		n, _ := strconv.Atoi(m[2])
		u, _ := strconv.ParseFloat(m[3], 64)
		calls += n
		usec += u
	}
	return usec, calls
}

// BenchmarkAppendEvent: appendEvent of a 1 KiB event with a delta of four
// keys (session, user:, app:, temp:) over HTTP on a real redis-server;
// reports Redis's time per script call beside the wall time.
func BenchmarkAppendEvent(b *testing.B) {
	srv := redisstoretest.NewReal(b)
	h := start(b, srv, nil)
	c := srv.Client(b)
	s := want(b, h.Do(b, "POST", app, `{"session_id":"bench"}`), 201)
	last := s.LastUpdateTime
	text := strings.Repeat("x", 1000)
	if err := c.Do(b.Context(), c.B().ConfigResetstat().Build()).Error(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		ts := last + 1
		body := fmt.Sprintf(`{"event":{"id":"e%d","author":"model","timestamp":%v,"content":{"parts":[{"text":%q}]}},"last_update_time":%v,"state_delta":{"step":%d,"user:seen":%d,"app:total":%d,"temp:x":1}}`,
			i, ts, text, last, i, i, i)
		if rep := h.Do(b, "POST", app+"/bench/events", body); rep.Status != 201 {
			b.Fatal(rep)
		}
		last = ts
	}
	b.StopTimer()
	usec, calls := redisUsec(b, c)
	b.ReportMetric(usec/float64(calls), "redis-µs/script")
}

// BenchmarkGetSessionRecent: getSession with numRecentEvents=10 on a
// 10 000-event session (the default ADK_MAX_EVENTS), over HTTP.
func BenchmarkGetSessionRecent(b *testing.B) {
	srv := redisstoretest.NewReal(b)
	h := start(b, srv, nil)
	c := srv.Client(b)
	s := want(b, h.Do(b, "POST", app, `{"session_id":"bench","state":{"a":1,"user:b":2,"app:c":3}}`), 201)
	last := s.LastUpdateTime
	for i := range 10000 {
		want(b, h.Do(b, "POST", app+"/bench/events", appendBody(fmt.Sprintf("e%d", i), last+1, last, `{}`)), 201)
		last++
	}
	if err := c.Do(b.Context(), c.B().ConfigResetstat().Build()).Error(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if rep := h.Do(b, "GET", app+"/bench?num_recent_events=10", ""); rep.Status != 200 {
			b.Fatal(rep)
		}
	}
	b.StopTimer()
	usec, calls := redisUsec(b, c)
	b.ReportMetric(usec/float64(calls), "redis-µs/script")
}
