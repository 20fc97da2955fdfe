package events_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/events"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

var benchFactories = []sidecar.Factory{sessions.Factory, events.Factory}

// BenchmarkCrossPod: subscribers on host B, custom events published through
// host A (two sidecars on one real redis-server), one event at a time, each
// to one of the sessions in turn; every subscriber of that session reports
// how long after its POST was sent the event reached it. Reports the
// latency percentiles over every delivery, the heap and goroutines per
// subscriber, Redis's connected clients, and the process's CPU per event
// (both hosts, the publisher and every reader: an upper bound of a
// sidecar's share). The writes wake readers through Pub/Sub; the heartbeat
// stays at 15 s.
//
//	REQUIRE_REAL_REDIS=1 go test -run '^$' -bench CrossPod -benchtime 400x ./events/
func BenchmarkCrossPod(b *testing.B) {
	for _, c := range []struct{ subs, sessions int }{{1, 1}, {50, 5}, {500, 50}} {
		b.Run(fmt.Sprintf("subscribers=%d/sessions=%d", c.subs, c.sessions), func(b *testing.B) { benchCrossPod(b, c.subs, c.sessions) })
	}
}

func benchCrossPod(b *testing.B, subs, sessions int) {
	srv := redisstoretest.NewReal(b)
	env := map[string]string{"SIDECAR_SSE_HEARTBEAT": "15s", "LOG_LEVEL": "error"}
	a := sidecartest.Start(b, srv, env, benchFactories...)
	bh := sidecartest.Start(b, srv, env, benchFactories...)
	path := func(i int) string { return fmt.Sprintf("/v1/users/bench/sessions/s%d", i) }
	for i := range sessions {
		if r := a.Do(b, "POST", path(i)+"/entries", `{"question":"q","answer":"a"}`); r.Status != 201 {
			b.Fatalf("seed: %d %s", r.Status, r.Body)
		}
	}
	clientsBefore := connectedClients(b, srv)
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lat := make(chan time.Duration, subs)
	tr := &http.Transport{MaxIdleConnsPerHost: subs}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	ready := make(chan struct{}, subs)
	for i := range subs {
		go readLatencies(ctx, hc, bh.API+path(i%sessions)+"/events", ready, lat)
	}
	for range subs {
		<-ready
	}
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	g1 := runtime.NumGoroutine()
	clientsAfter := connectedClients(b, srv)

	pub := &http.Client{}
	per := subs / sessions
	var all []time.Duration
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		ts := time.Now().UnixNano()
		body := `{"event":"x-lat","data":` + strconv.FormatInt(ts, 10) + `}`
		resp, err := pub.Post(a.API+path(i%sessions)+"/events", "application/json", strings.NewReader(body))
		if err != nil || resp.StatusCode != 201 {
			b.Fatalf("publish: %v %v", resp, err)
		}
		resp.Body.Close()
		for range per {
			select {
			case d := <-lat:
				all = append(all, d)
			case <-time.After(10 * time.Second):
				b.Fatalf("event %d: not delivered to every subscriber within 10 s", i)
			}
		}
	}
	b.StopTimer()
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
	slices.Sort(all)
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))]) / 1e6 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/event")
	b.ReportMetric(float64(int64(m1.HeapInuse)-int64(m0.HeapInuse))/float64(subs)/1024, "heap-KiB/sub")
	b.ReportMetric(float64(g1-g0)/float64(subs), "goroutines/sub")
	b.ReportMetric(float64(clientsAfter-clientsBefore), "redis-conns-added")
}

// readLatencies reads one stream and reports, for every x-lat event, the
// time since the publisher stamped it.
func readLatencies(ctx context.Context, hc *http.Client, url string, ready chan<- struct{}, lat chan<- time.Duration) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	rd := bufio.NewReaderSize(resp.Body, 4096)
	first := true
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		if first && strings.HasPrefix(line, "retry:") {
			first = false
			ready <- struct{}{}
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			if ts, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				lat <- time.Duration(time.Now().UnixNano() - ts)
			}
		}
	}
}

// connectedClients is Redis's INFO clients connected_clients.
func connectedClients(b *testing.B, srv *redisstoretest.Server) int {
	c := srv.Client(b)
	info, err := c.Do(b.Context(), c.B().Info().Section("clients").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}
