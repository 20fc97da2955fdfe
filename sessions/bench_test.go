package sessions_test

// Benchmarks for the session module's performance targets (results
// and commands in BENCHMARKS.md, section "Sessions"). They run only with
// -bench, e.g.
//
//	go test -run '^$' -bench . -benchtime 2s -timeout 5m ./sessions/
//
// Each one runs a real host on loopback (sidecartest) against a real
// redis-server (redisstoretest.NewReal); without redis-server they skip.
// The HTTP client shares the process (and the cores) with the host, so the
// numbers include the load generator, as the target asks.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/client"
	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// benchConns is the number of concurrent clients of the append benchmark,
// as redis-benchmark -c 16 in bench/sessions_load.sh.
const benchConns = 16

// The Q&A text of every benchmark entry: a typical short agent turn
// (the stored entry is about 520 bytes, bench/sessions_load.sh uses the same).
const (
	benchQuestion = "What did the quarterly report say about revenue growth in the EMEA region?"
	benchContext  = "Q3 report, section 4.2: EMEA revenue grew 12% year over year, driven by the DACH markets and new enterprise contracts in the Nordics."
	benchAnswer   = "EMEA revenue grew 12% year over year in Q3, mostly from DACH and new Nordic enterprise contracts."
)

// benchBody is the POST .../entries body for qaID.
func benchBody(qaID string) string {
	return `{"qa_id":"` + qaID + `","question":"` + benchQuestion + `","context":"` + benchContext + `","answer":"` + benchAnswer + `"}`
}

// benchEntry is the stored entry Cognee would write for qaID.
func benchEntry(b *testing.B, qaID string) string {
	b.Helper()
	var f cognee.QAFields
	f.Question, _ = json.Marshal(benchQuestion)
	f.Context, _ = json.Marshal(benchContext)
	f.Answer, _ = json.Marshal(benchAnswer)
	e, err := cognee.NewQAEntry(f, qaID, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return string(e)
}

type benchRig struct {
	srv    *redisstoretest.Server
	host   *sidecartest.Host
	client *http.Client
}

// benchStart runs a sessions-only host against a fresh real redis-server.
func benchStart(b *testing.B) *benchRig {
	b.Helper()
	srv := redisstoretest.NewReal(b)
	h := sidecartest.Start(b, srv, envconf.Env{"LOG_LEVEL": "warn"}, sessions.Factory)
	tr := &http.Transport{MaxIdleConns: 4 * benchConns, MaxIdleConnsPerHost: 4 * benchConns, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchRig{srv: srv, host: h, client: &http.Client{Transport: tr}}
}

// do sends one request and fails the benchmark unless the status is want.
func (r *benchRig) do(b *testing.B, method, path, body string, want int) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, r.host.API+path, rd)
	if err != nil {
		b.Error(err)
		return
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Errorf("%s %s: %d %s", method, path, resp.StatusCode, got)
	}
}

// benchLatencies collects per-request latencies from many goroutines.
type benchLatencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *benchLatencies) add(d []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d...)
	l.mu.Unlock()
}

// report adds req/s, p50 and p99 (microseconds) to the benchmark's output.
func (l *benchLatencies) report(b *testing.B, requests int) {
	if requests == 0 || b.Elapsed() <= 0 {
		return
	}
	b.ReportMetric(float64(requests)/b.Elapsed().Seconds(), "req/s")
	if len(l.all) == 0 {
		return
	}
	slices.Sort(l.all)
	q := func(p float64) float64 {
		return float64(l.all[int(p*float64(len(l.all)-1))].Microseconds())
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// BenchmarkAppendHTTP is target 1: POST .../entries from 16 concurrent
// keep-alive clients, each appending to its own sessions (a new session every
// 1000 entries), every entry with a unique qa_id.
func BenchmarkAppendHTTP(b *testing.B) {
	rig := benchStart(b)
	var worker atomic.Int64
	var lat benchLatencies
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((benchConns + procs - 1) / procs) // 16 goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := strconv.FormatInt(worker.Add(1), 10)
		local := make([]time.Duration, 0, 4096)
		for i := 0; pb.Next(); i++ {
			path := "/v1/users/bench/sessions/w" + w + "-" + strconv.Itoa(i/1000) + "/entries"
			start := time.Now()
			rig.do(b, http.MethodPost, path, benchBody("q-"+w+"-"+strconv.Itoa(i)), http.StatusCreated)
			local = append(local, time.Since(start))
		}
		lat.add(local)
	})
	b.StopTimer()
	lat.report(b, b.N)
}

// BenchmarkAppendStore is a diagnostic for target 1: the same appends as
// BenchmarkAppendHTTP from 16 goroutines, straight into the store
// (sessions.Store.Append: FCALL of session_append's function),
// without HTTP, request decoding or response encoding. The gap to
// BenchmarkAppendHTTP is the cost of the HTTP layer.
func BenchmarkAppendStore(b *testing.B) {
	rig := benchStart(b)
	store := sessions.NewStore(sessionstore.New(rig.host.Conn, sessionstore.Config{TTLSeconds: 604800, AbandonAfterSeconds: 1800}))
	var f cognee.QAFields
	f.Question, _ = json.Marshal(benchQuestion)
	f.Context, _ = json.Marshal(benchContext)
	f.Answer, _ = json.Marshal(benchAnswer)
	var worker atomic.Int64
	var lat benchLatencies
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((benchConns + procs - 1) / procs)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := strconv.FormatInt(worker.Add(1), 10)
		local := make([]time.Duration, 0, 4096)
		ctx := context.Background()
		for i := 0; pb.Next(); i++ {
			qaID := "q-" + w + "-" + strconv.Itoa(i)
			start := time.Now()
			entry, err := cognee.NewQAEntry(f, qaID, time.Now())
			if err == nil {
				_, _, err = store.Append(ctx, "bench", "w"+w+"-"+strconv.Itoa(i/1000), qaID, entry, search.Eager)
			}
			if err != nil {
				b.Error(err)
			}
			local = append(local, time.Since(start))
		}
		lat.add(local)
	})
	b.StopTimer()
	lat.report(b, b.N)
}

const benchSessionLen = 500

// BenchmarkFeedbackHTTP is target 2, the sidecar's side: PUT .../feedback on
// a 500-entry session from one client, the target entry chosen at random.
func BenchmarkFeedbackHTTP(b *testing.B) {
	rig := benchStart(b)
	base := "/v1/users/bench/sessions/fb/entries"
	for i := range benchSessionLen {
		rig.do(b, http.MethodPost, base, benchBody("q-"+strconv.Itoa(i)), http.StatusCreated)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var lat benchLatencies
	local := make([]time.Duration, 0, 1<<16)
	n := 0
	for b.Loop() {
		path := base + "/q-" + strconv.Itoa(rng.IntN(benchSessionLen)) + "/feedback"
		body := `{"feedback_text":"useful, thanks","feedback_score":` + strconv.Itoa(1+rng.IntN(5)) + `}`
		start := time.Now()
		rig.do(b, http.MethodPut, path, body, http.StatusOK)
		local = append(local, time.Since(start))
		n++
	}
	lat.add(local)
	lat.report(b, n)
}

// benchCogneeEntry is Cognee's SessionQAEntry as its client decodes it;
// the Go client's type keeps model_dump() field order, so re-encoding keeps
// the layout.
type benchCogneeEntry = client.SessionQAEntry

// BenchmarkCogneeFeedbackPath is target 2, Cognee's side done in Go: one
// client reads the whole 500-entry list (LRANGE 0 -1), decodes every entry,
// finds the random target by qa_id, changes its feedback, re-encodes it and
// writes it back with LSET. (Cognee does this in Python, which is slower;
// bench/sessions_load.sh measures that.)
func BenchmarkCogneeFeedbackPath(b *testing.B) {
	srv := redisstoretest.NewReal(b)
	c := srv.Client(b)
	ctx := context.Background()
	key := redisstore.Layout{}.Session("bench", "fb").Entries
	elems := make([]string, benchSessionLen)
	for i := range elems {
		elems[i] = benchEntry(b, "q-"+strconv.Itoa(i))
	}
	if err := c.Do(ctx, c.B().Rpush().Key(key).Element(elems...).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var lat benchLatencies
	local := make([]time.Duration, 0, 1<<16)
	n := 0
	for b.Loop() {
		target := "q-" + strconv.Itoa(rng.IntN(benchSessionLen))
		start := time.Now()
		if err := benchCogneeFeedback(ctx, c, key, target, 1+rng.IntN(5)); err != nil {
			b.Fatal(err)
		}
		local = append(local, time.Since(start))
		n++
	}
	lat.add(local)
	lat.report(b, n)
}

func benchCogneeFeedback(ctx context.Context, c rueidis.Client, key, qaID string, score int) error {
	raw, err := c.Do(ctx, c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return err
	}
	entries := make([]benchCogneeEntry, len(raw))
	for i, s := range raw {
		if err := json.Unmarshal([]byte(s), &entries[i]); err != nil {
			return err
		}
	}
	for i := range entries {
		if entries[i].QAID != qaID {
			continue
		}
		text := "useful, thanks"
		entries[i].FeedbackText, entries[i].FeedbackScore = &text, &score
		out, err := json.Marshal(&entries[i])
		if err != nil {
			return err
		}
		return c.Do(ctx, c.B().Lset().Key(key).Index(int64(i)).Element(string(out)).Build()).Error()
	}
	return fmt.Errorf("no entry %s", qaID)
}

// BenchmarkLastN is target 3: GET .../entries?last_n=10 over sessions of 100
// and 10 000 entries (written as Cognee writes them). O(n) reads cost the
// same in both; an O(session length) read would be ~100x slower on the long one.
func BenchmarkLastN(b *testing.B) {
	for _, size := range []int{100, 10000} {
		b.Run("len="+strconv.Itoa(size), func(b *testing.B) {
			rig := benchStart(b)
			c := rig.srv.Client(b)
			ctx := context.Background()
			key := redisstore.Layout{}.Session("bench", "lastn").Entries
			elems := make([]string, size)
			for i := range elems {
				elems[i] = benchEntry(b, "q-"+strconv.Itoa(i))
			}
			for i := 0; i < size; i += 1000 {
				chunk := elems[i:min(i+1000, size)]
				if err := c.Do(ctx, c.B().Rpush().Key(key).Element(chunk...).Build()).Error(); err != nil {
					b.Fatal(err)
				}
			}
			var lat benchLatencies
			local := make([]time.Duration, 0, 1<<16)
			n := 0
			for b.Loop() {
				start := time.Now()
				rig.do(b, http.MethodGet, "/v1/users/bench/sessions/lastn/entries?last_n=10", "", http.StatusOK)
				local = append(local, time.Since(start))
				n++
			}
			lat.add(local)
			lat.report(b, n)
		})
	}
}

// BenchmarkAppendSearchIndex is what keeping the relevance search index
// costs an append: the same appends (benchQuestion, benchContext,
// benchAnswer: a typical Q&A entry) one at a time into the store, with the
// entry's document under each SEARCH_INDEX (off; on-demand for a user who
// never searched and for one who did; eager),
// on one real redis-server. Reported: redis-us/op, Redis's own time per
// script call (INFO commandstats), and wall-us/op, the wall time of the
// store call (encoding, the Go analysis, the round trip and the script).
func BenchmarkAppendSearchIndex(b *testing.B) {
	srv := redisstoretest.NewReal(b)
	store := sessions.NewStore(sessionstore.New(srv.Conn(b), sessionstore.Config{TTLSeconds: 604800, AbandonAfterSeconds: 1800}))
	c := srv.Client(b)
	var f cognee.QAFields
	f.Question, _ = json.Marshal(benchQuestion)
	f.Context, _ = json.Marshal(benchContext)
	f.Answer, _ = json.Marshal(benchAnswer)
	usec := func(cmds ...string) float64 {
		info, err := c.Do(context.Background(), c.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		var total float64
		for _, line := range strings.Split(info, "\n") {
			if slices.ContainsFunc(cmds, func(cmd string) bool { return strings.HasPrefix(line, "cmdstat_"+cmd+":") }) {
				for _, kv := range strings.Split(strings.TrimSpace(strings.SplitN(line, ":", 2)[1]), ",") {
					if v, ok := strings.CutPrefix(kv, "usec="); ok {
						n, _ := strconv.ParseFloat(v, 64)
						total += n
					}
				}
			}
		}
		return total
	}
	evalUsec := func() float64 { return usec("fcall", "evalsha", "eval") }
	b.Run("cognee-rpush-expire", func(b *testing.B) {
		ctx := context.Background()
		before := usec("rpush", "expire")
		for i := 0; b.Loop(); i++ {
			qa := fmt.Sprintf("q-cognee-%d", i)
			entry, err := cognee.NewQAEntry(f, qa, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			key := redisstore.Layout{}.Session("bench-cognee", "s-"+strconv.Itoa(i/500)).Entries
			for _, r := range c.DoMulti(ctx, c.B().Rpush().Key(key).Element(string(entry)).Build(), c.B().Expire().Key(key).Seconds(604800).Build()) {
				if err := r.Error(); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric((usec("rpush", "expire")-before)/float64(b.N), "redis-us/op")
	})
	cases := []struct {
		name     string
		mode     search.Mode
		searched bool // the user has an index (made as a first search makes it)
	}{{"index=off", search.Off, false}, {"index=on-demand,never-searched", search.Probe, false},
		{"index=on-demand,searched", search.OnDemand, true}, {"index=eager", search.Eager, false}}
	for _, tc := range cases {
		name := tc.name
		user := "bench-" + strings.NewReplacer("=", "-", ",", "-").Replace(name)
		if tc.searched {
			if err := c.Do(context.Background(), c.B().Hset().Key(redisstore.Layout{}.SearchStats(user)).FieldValue().FieldValue("build", "").Build()).Error(); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			before := evalUsec()
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				qa := fmt.Sprintf("q-%s-%d", name, i)
				entry, err := cognee.NewQAEntry(f, qa, time.Now())
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := store.Append(ctx, user, "s-"+strconv.Itoa(i/500), qa, entry, tc.mode); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((evalUsec()-before)/float64(b.N), "redis-us/op")
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "wall-us/op")
		})
	}
}

// BenchmarkSearchMemory is the Redis memory per session of each
// SEARCH_INDEX (and Cognee's own list): 50 users × 12 sessions of 10
// typical entries (benchQuestion, ...), on a fresh redis-server per case.
// Reported: B/session, used_memory's growth per session; search-B/session,
// what the search keys (the sessions' documents hashes, the user's sessions
// list and marker) hold by MEMORY USAGE; search/entries, the search keys' bytes over the entries' own.
// One iteration is the whole run (-benchtime=1x).
func BenchmarkSearchMemory(b *testing.B) {
	var f cognee.QAFields
	f.Question, _ = json.Marshal(benchQuestion)
	f.Context, _ = json.Marshal(benchContext)
	f.Answer, _ = json.Marshal(benchAnswer)
	const users, perUser, entries = 50, 12, 10
	cases := []struct {
		name     string
		mode     search.Mode
		searched bool
		cognee   bool
	}{{"cognee", "", false, true}, {"index=off", search.Off, false, false},
		{"index=on-demand,never-searched", search.Probe, false, false},
		{"index=on-demand,searched", search.OnDemand, true, false}, {"index=eager", search.Eager, false, false}}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				srv := redisstoretest.NewReal(b)
				c := srv.Client(b)
				ctx := context.Background()
				store := sessions.NewStore(sessionstore.New(srv.Conn(b), sessionstore.Config{TTLSeconds: 604800, AbandonAfterSeconds: 1800}))
				used := func() int64 {
					info, _ := c.Do(ctx, c.B().Info().Section("memory").Build()).ToString()
					for _, line := range strings.Split(info, "\r\n") {
						if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
							n, _ := strconv.ParseInt(v, 10, 64)
							return n
						}
					}
					return 0
				}
				if tc.searched {
					for u := range users {
						c.Do(ctx, c.B().Hset().Key(redisstore.Layout{}.SearchStats(fmt.Sprintf("u%d", u))).FieldValue().FieldValue("build", "").Build())
					}
				}
				before := used()
				var entryBytes int64
				for u := range users {
					for s := range perUser {
						for e := range entries {
							qa := fmt.Sprintf("q%d-%d-%d", u, s, e)
							entry, err := cognee.NewQAEntry(f, qa, time.Now())
							if err != nil {
								b.Fatal(err)
							}
							entryBytes += int64(len(entry))
							user, session := fmt.Sprintf("u%d", u), fmt.Sprintf("s%d", s)
							if tc.cognee {
								key := redisstore.Layout{}.Session(user, session).Entries
								c.Do(ctx, c.B().Rpush().Key(key).Element(string(entry)).Build())
								c.Do(ctx, c.B().Expire().Key(key).Seconds(604800).Build())
								continue
							}
							if _, _, err := store.Append(ctx, user, session, qa, entry, tc.mode); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
				sessionsN := float64(users * perUser)
				var searchBytes int64
				for _, pattern := range []string{"agent_search*"} {
					keys, _ := c.Do(ctx, c.B().Keys().Pattern(pattern).Build()).AsStrSlice()
					for _, k := range keys {
						n, _ := c.Do(ctx, c.B().MemoryUsage().Key(k).Samples(0).Build()).AsInt64()
						searchBytes += n
					}
				}
				b.ReportMetric(float64(used()-before)/sessionsN, "B/session")
				b.ReportMetric(float64(searchBytes)/sessionsN, "search-B/session")
				b.ReportMetric(float64(searchBytes)/float64(entryBytes), "search/entries")
			}
		})
	}
}
