package messages_test

import (
	"fmt"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// calls returns how many times Redis ran cmd since the last CONFIG
// RESETSTAT (commands run by scripts included).
func calls(t testing.TB, c rueidis.Client, cmd string) int {
	t.Helper()
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func resetStats(t testing.TB, c rueidis.Client) {
	t.Helper()
	if err := c.Do(t.Context(), c.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// chain appends a path of n messages c0..c<n-1> under the latest leaf, in
// batches of 100.
func chain(t testing.TB, h *sidecartest.Host, session string, n int) {
	t.Helper()
	for from := 0; from < n; from += 100 {
		var b []string
		for i := from; i < min(n, from+100); i++ {
			b = append(b, fmt.Sprintf(`{"id":"c%d","role":"user","content":"message %d"}`, i, i))
		}
		rep := h.Do(t, "POST", "/v1/users/alice/sessions/"+session+"/messages", `{"messages":[`+strings.Join(b, ",")+`]}`)
		if rep.Status != 201 {
			t.Fatalf("append c%d..: %s", from, rep)
		}
	}
}

// A page costs O(limit + log n) Redis work: reading 50 messages anywhere on
// a path of 2 000 reads at most 50 + 4 log2(2 000) tree nodes (counted by
// Redis itself), and the whole deep path reads back in order.
func TestBoundedWork(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	c := srv.Client(t)
	const n = 2000
	chain(t, h, "deep", n)
	logn := bits.Len(uint(n))
	for _, q := range []string{"limit=50&offset=1000", "limit=50&offset=3", "order=desc&limit=50&offset=1500", "limit=50&after=c777", "order=desc&limit=50&before=c100"} {
		resetStats(t, c)
		rep := h.Do(t, "GET", "/v1/users/alice/sessions/deep/messages?"+q, "")
		var p page
		rep.JSON(t, &p)
		if rep.Status != 200 || len(p.Messages) != 50 || p.Total != n {
			t.Fatalf("?%s: %d, %d messages, total %d", q, rep.Status, len(p.Messages), p.Total)
		}
		if got := calls(t, c, "hget"); got > 50+4*logn+4 {
			t.Errorf("?%s: %d HGETs, want at most %d (limit + 4 log2 n)", q, got, 50+4*logn+4)
		}
		if got := calls(t, c, "hmget"); got > 2 {
			t.Errorf("?%s: %d HMGETs, want at most 2", q, got)
		}
	}
	// the whole path, in pages of 1000 following next_cursor
	var all []string
	q := "limit=1000"
	for {
		p := pathOf(t, h, "deep", q)
		for _, m := range p.Messages {
			all = append(all, m.ID)
		}
		if p.NextCursor == nil {
			break
		}
		q = "limit=1000&after=" + *p.NextCursor
	}
	if len(all) != n || all[0] != "c0" || all[n-1] != fmt.Sprintf("c%d", n-1) || all[1234] != "c1234" {
		t.Fatalf("deep path read back: %d messages, first %s, last %s", len(all), all[0], all[len(all)-1])
	}
}

func pathOf(t testing.TB, h *sidecartest.Host, session, query string) page {
	t.Helper()
	rep := h.Do(t, "GET", "/v1/users/alice/sessions/"+session+"/messages?"+query, "")
	if rep.Status != 200 {
		t.Fatalf("GET ?%s: %s", query, rep)
	}
	var p page
	rep.JSON(t, &p)
	return p
}

// BenchmarkPathPage reads a page of 50 from the middle of a path of 100
// and of 10 000 messages (real redis-server); it reports the Redis
// commands per read, which do not grow with the path beyond log n.
func BenchmarkPathPage(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			srv := redisstoretest.NewReal(b)
			h := sidecartest.Start(b, srv, nil, messagesModules()...)
			chain(b, h, "bench", n)
			c := srv.Client(b)
			cl := sidecartest.NewClient(b, h.API)
			url := fmt.Sprintf("/v1/users/alice/sessions/bench/messages?limit=50&offset=%d", n/2)
			resetStats(b, c)
			ops := 0
			for b.Loop() {
				if rep := cl.Send(b.Context(), "GET", url, ""); rep.Status != 200 {
					b.Fatal(rep)
				}
				ops++
			}
			cmds := calls(b, c, "hget") + calls(b, c, "hmget") + calls(b, c, "hstrlen")
			b.ReportMetric(float64(cmds)/float64(ops), "redis-cmds/op")
		})
	}
}

// usecPerCall is Redis's own time per call of cmd since the last CONFIG
// RESETSTAT (INFO commandstats).
func usecPerCall(t testing.TB, c rueidis.Client, cmd string) float64 {
	t.Helper()
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=\d+,usec=\d+,usec_per_call=([0-9.]+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return f
}

// BenchmarkAppend appends one message per call over HTTP (real host, real
// redis-server), to a session that grows, beside a Q&A entry append for
// comparison; it reports Redis's own µs per script call.
func BenchmarkAppend(b *testing.B) {
	for _, kind := range []string{"message", "message-unindexed", "entry"} {
		b.Run(kind, func(b *testing.B) {
			srv := redisstoretest.NewReal(b)
			env := envconf.Env{}
			if kind == "message-unindexed" {
				env["SEARCH_INDEX"] = "false"
			}
			h := sidecartest.Start(b, srv, env, messagesModules()...)
			c := srv.Client(b)
			cl := sidecartest.NewClient(b, h.API)
			resetStats(b, c)
			i := 0
			for b.Loop() {
				var rep sidecartest.Reply
				if kind != "entry" {
					rep = cl.Send(b.Context(), "POST", "/v1/users/alice/sessions/bench/messages", fmt.Sprintf(`{"id":"m%d","role":"user","content":"How do I reset my password on the staging cluster?"}`, i))
				} else {
					rep = cl.Send(b.Context(), "POST", "/v1/users/alice/sessions/bench/entries", fmt.Sprintf(`{"qa_id":"q%d","question":"How do I reset my password on the staging cluster?","answer":"a","context":""}`, i))
				}
				if rep.Status != 201 {
					b.Fatal(rep)
				}
				i++
			}
			b.ReportMetric(usecPerCall(b, c, "fcall")+usecPerCall(b, c, "evalsha"), "redis-µs/append") // one of them ran
		})
	}
}
