package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/bench/rig"
	"github.com/agentsidecar/agentsidecar/redisstore"
)

func main() {
	d := flag.Duration("d", 5*time.Second, "length of the idle baseline and of each append loop")
	entries := flag.Int("entries", 20000, "entries of the Cognee-written session the search indexes")
	bin := flag.String("sidecar", "", "a sidecar binary to run (default: ./cmd/sidecar, built)")
	flag.Parse()
	if err := run(*d, *entries, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "pinglatency:", err)
		os.Exit(1)
	}
}

// slowlogMicros is the SLOWLOG threshold of the run (5 ms).
const slowlogMicros = 5000

// scenario is one phase: work runs while another client PINGs.
type scenario struct {
	name string
	work func() (string, error) // what it did
}

func run(d time.Duration, entries int, bin string) error {
	srv, err := rig.Start(bin)
	if err != nil {
		return err
	}
	defer srv.Stop()
	admin, err := rig.Dial(srv.RedisPort)
	if err != nil {
		return err
	}
	defer admin.Close()
	for _, kv := range [][2]string{{"slowlog-log-slower-than", strconv.Itoa(slowlogMicros)}, {"slowlog-max-len", "100000"}} {
		if _, err := admin.Do("CONFIG", "SET", kv[0], kv[1]); err != nil {
			return err
		}
	}
	api := &http.Client{Timeout: 2 * time.Minute}
	// the scripts are loaded (once a pod and Redis) before anything is timed
	if err := post(api, srv.API, "warm", `{"role":"user","content":"x"}`); err != nil {
		return err
	}
	fmt.Printf("redis %s; load %s; PING round trips of a separate client, one at a time; SLOWLOG at %d ms\n\n",
		rig.RedisVersion(), loadavg(), slowlogMicros/1000)
	fmt.Printf("%-34s %8s %8s %8s %8s %9s %7s %9s  %s\n", "scenario", "PINGs", "p50 µs", "p99 µs", "p99.9 µs", "max µs",
		"slow≥5", "slow max", "done")
	appends := func(size, n int) func() (string, error) {
		return func() (string, error) { return appendLoop(api, srv.API, d, size, n) }
	}
	for _, sc := range []scenario{
		{"idle", func() (string, error) { time.Sleep(d); return "", nil }},
		{"appends: 1 000 msgs, 32 × 256 KiB", appends(256<<10, 32)},
		{"appends: 1 000 msgs, 16 × 512 KiB", appends(512<<10, 16)},
		{"appends: 1 000 msgs, 8 × 1 MiB", appends(1<<20, 8)},
	} {
		if err := measure(srv.RedisPort, admin, sc); err != nil {
			return err
		}
	}
	layout := redisstore.Layout{}
	if err := cognee(admin, layout.Session("reader", "cold").Entries, entries); err != nil {
		return err
	}
	err = measure(srv.RedisPort, admin, scenario{fmt.Sprintf("cold relevance search, %d entries", entries),
		func() (string, error) { return coldSearch(api, srv.API, admin) }})
	fmt.Printf("\nload at the end: %s\n", loadavg())
	return err
}

// measure runs sc while a separate connection PINGs back to back, and
// prints the PINGs' round trips and the SLOWLOG entries of the phase.
func measure(port int, admin *rig.Conn, sc scenario) error {
	if _, err := admin.Do("SLOWLOG", "RESET"); err != nil {
		return err
	}
	conn, err := rig.Dial(port)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	rtts := make(chan []time.Duration, 1)
	go func() {
		var out []time.Duration
		for ctx.Err() == nil {
			t := time.Now()
			if _, err := conn.Do("PING"); err != nil {
				break
			}
			out = append(out, time.Since(t))
		}
		rtts <- out
	}()
	did, err := sc.work()
	cancel()
	r := <-rtts
	if err != nil {
		return fmt.Errorf("%s: %w", sc.name, err)
	}
	n, most, cmd, err := slowlog(admin)
	if err != nil {
		return err
	}
	slices.Sort(r)
	if len(r) == 0 {
		return fmt.Errorf("%s: no PING answered", sc.name)
	}
	q := func(p float64) int64 { return r[int(p*float64(len(r)-1))].Microseconds() }
	fmt.Printf("%-34s %8d %8d %8d %8d %9d %7d %9d  %s\n", sc.name, len(r), q(0.5), q(0.99), q(0.999), r[len(r)-1].Microseconds(),
		n, most, did)
	if cmd != "" {
		fmt.Printf("%-34s slowest logged: %s\n", "", cmd)
	}
	return nil
}

// slowlog reads the SLOWLOG: how many entries, the longest (µs) and its
// command (name and first argument).
func slowlog(admin *rig.Conn) (n int, most int64, cmd string, err error) {
	v, err := admin.Do("SLOWLOG", "GET", "-1")
	if err != nil {
		return 0, 0, "", err
	}
	all, _ := v.([]any)
	for _, e := range all {
		f, _ := e.([]any)
		if len(f) < 4 {
			continue
		}
		us, _ := f[2].(int64)
		if us > most {
			most, cmd = us, ""
			args, _ := f[3].([]any)
			for _, a := range args[:min(len(args), 2)] {
				s, _ := a.(string)
				cmd += s + " "
			}
		}
	}
	return len(all), most, strings.TrimSpace(cmd), nil
}

// appendLoop appends, on fresh sessions, a 1 000-message turn and then n
// items of size bytes each (as sent), until d passes.
func appendLoop(api *http.Client, base string, d time.Duration, size, n int) (string, error) {
	turn, big := chatBatch(1000), toolOutputs(n, size-100)
	done := 0
	for t := time.Now(); time.Since(t) < d; done++ {
		session := fmt.Sprintf("big-%d-%d", size, done)
		for _, body := range []string{turn, big} {
			if err := post(api, base, session, body); err != nil {
				return "", err
			}
		}
	}
	return fmt.Sprintf("%d × (1 000 msgs + %d MiB)", done, n*size>>20), nil
}

func post(api *http.Client, base, session, body string) error {
	rep, err := api.Post(base+"/v1/users/bench/sessions/"+session+"/messages", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(rep.Body)
	rep.Body.Close()
	if rep.StatusCode != http.StatusCreated {
		return fmt.Errorf("append to %s: %d %s", session, rep.StatusCode, b[:min(len(b), 300)])
	}
	return nil
}

// chatBatch is an append of n short user messages.
func chatBatch(n int) string {
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":"user","content":"message %d of a long turn"}`, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// toolOutputs is an append of n tool outputs whose items are size bytes.
func toolOutputs(n, size int) string {
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		head := fmt.Sprintf(`{"type":"function_call_result","callId":"c%06d","output":"`, i)
		fmt.Fprintf(&b, `{"role":"tool","format":"openai.responses","item":%s%s"}}`, head, strings.Repeat("x", size-len(head)-2))
	}
	b.WriteString(`]}`)
	return b.String()
}

// cognee writes n Q&A entries to key as Cognee does (RPUSH, 1 000 a
// command, then EXPIRE), each about 800 bytes.
func cognee(c *rig.Conn, key string, n int) error {
	t0 := time.Now().Add(-time.Hour)
	for i := 0; i < n; i += 1000 {
		args := []string{"RPUSH", key}
		for k := i; k < min(i+1000, n); k++ {
			qa := fmt.Sprintf("q%d", k)
			args = append(args, fmt.Sprintf(`{"time": %q, "question": "what about %s plain?", "context": "", "answer": %q, "qa_id": %q, "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`,
				t0.Add(time.Duration(k)*time.Microsecond).UTC().Format("2006-01-02T15:04:05.000000"), qa, strings.Repeat("lorem ipsum ", 58), qa))
		}
		if _, err := c.Do(args...); err != nil {
			return err
		}
	}
	_, err := c.Do("EXPIRE", key, "604800")
	return err
}

// coldSearch asks a relevance search of the Cognee-written session until
// its answer no longer says the index is building (once a second after the
// first: each search indexes for up to 2 s, the background worker between).
func coldSearch(api *http.Client, base string, admin *rig.Conn) (string, error) {
	before, err := scripts(admin)
	if err != nil {
		return "", err
	}
	t := time.Now()
	for n := 1; ; n++ {
		rep, err := api.Get(base + "/v1/users/reader/sessions/cold/search?rank=relevance&q=" + url.QueryEscape("what about plain"))
		if err != nil {
			return "", err
		}
		var a struct {
			Index   string            `json:"index"`
			Results []json.RawMessage `json:"results"`
		}
		err = json.NewDecoder(rep.Body).Decode(&a)
		rep.Body.Close()
		if err != nil || rep.StatusCode != http.StatusOK {
			return "", fmt.Errorf("search: %d %v", rep.StatusCode, err)
		}
		if a.Index != "building" {
			after, err := scripts(admin)
			return fmt.Sprintf("%d searches, %d results, complete after %.1f s, %d scripts", n, len(a.Results),
				time.Since(t).Seconds(), after-before), err
		}
		time.Sleep(time.Second)
	}
}

// scripts is how many FCALL and FCALL_RO Redis has run.
func scripts(admin *rig.Conn) (int, error) {
	v, err := admin.Do("INFO", "commandstats")
	if err != nil {
		return 0, err
	}
	s, _ := v.(string)
	n := 0
	for _, line := range strings.Split(s, "\n") {
		for _, name := range []string{"cmdstat_fcall:", "cmdstat_fcall_ro:"} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), name+"calls="); ok {
				k, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				n += k
			}
		}
	}
	return n, nil
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:min(3, len(strings.Fields(string(b))))], " ")
}
