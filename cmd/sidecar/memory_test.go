package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// podLimit is the memory limit of the pod these tests stand for; the
// sidecar gets the Go limit it would set from the container's (90%).
const podLimit = 128 << 20

// startLimited runs the binary on a real redis-server as in a pod with a
// 128 MiB memory limit.
func startLimited(t *testing.T, env ...string) *proc {
	t.Helper()
	srv := redisstoretest.NewReal(t)
	p := start(t, append([]string{"REDIS_URL=" + srv.URL(), fmt.Sprintf("GOMEMLIMIT=%d", podLimit/10*9)}, env...)...)
	waitStatus(t, "http://"+p.ops+"/readyz", 200, 15*time.Second)
	return p
}

// peakRSS is the process's peak resident set (VmHWM), from /proc.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// appendBody is an append of n messages whose items hold size bytes of
// text each.
func appendBody(tag string, n, size int) []byte {
	type item struct {
		Type   string `json:"type"`
		CallID string `json:"callId"`
		Output string `json:"output"`
	}
	type msg struct {
		Role   string `json:"role"`
		Item   item   `json:"item"`
		Format string `json:"format"`
	}
	text := strings.Repeat(tag+" lorem ipsum dolor sit amet ", size/(len(tag)+27)+1)[:size]
	msgs := make([]msg, n)
	for i := range msgs {
		msgs[i] = msg{Role: "tool", Item: item{Type: "function_call_result", CallID: fmt.Sprintf("c%d", i), Output: text}, Format: "openai.responses"}
	}
	b, _ := json.Marshal(map[string]any{"messages": msgs})
	return b
}

type reply struct {
	status     int
	code       string
	retryAfter string
}

func post(url string, body []byte) (reply, error) {
	c := http.Client{Timeout: 60 * time.Second}
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	var env struct {
		Error struct{ Code string } `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &env)
	return reply{resp.StatusCode, env.Error.Code, resp.Header.Get("Retry-After")}, nil
}

// 16 concurrent 8 MiB appends in a 128 MiB pod: each is stored whole
// (201) or refused whole with 503 overloaded and Retry-After, none fails
// otherwise, and the process's peak RSS stays under the pod's limit.
func TestConcurrentLargeAppendsStayInsideThePodLimit(t *testing.T) {
	p := startLimited(t)
	const clients = 16
	body := appendBody("big", 8, 1_040_000)
	if len(body) < 8_000_000 || len(body) > 8<<20 {
		t.Fatalf("body is %d bytes, want about 8 MiB", len(body))
	}
	var wg sync.WaitGroup
	answers := make([]reply, clients)
	errs := make([]error, clients)
	for i := range clients {
		wg.Go(func() {
			answers[i], errs[i] = post(fmt.Sprintf("http://%s/v1/users/mem/sessions/s%d/messages", p.api, i), body)
		})
	}
	wg.Wait()
	stored, shed := 0, 0
	for i, a := range answers {
		switch {
		case errs[i] != nil:
			t.Errorf("append %d: %v", i, errs[i])
		case a.status == 201:
			stored++
		case a.status == 503 && a.code == "overloaded" && a.retryAfter != "":
			shed++
		default:
			t.Errorf("append %d: %d %q (Retry-After %q), want 201, or 503 overloaded with Retry-After", i, a.status, a.code, a.retryAfter)
		}
	}
	insidePod(t, p, stored, fmt.Sprintf("%d appends stored, %d shed with 503 overloaded", stored, shed))
	// what was stored is whole
	for i, a := range answers {
		if a.status != 201 {
			continue
		}
		resp, err := http.Get(fmt.Sprintf("http://%s/v1/users/mem/sessions/s%d/messages?limit=1", p.api, i))
		if err != nil {
			t.Fatal(err)
		}
		var page struct{ Total int }
		_ = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if page.Total != 8 {
			t.Errorf("session s%d holds %d messages, want 8", i, page.Total)
		}
	}
}

// With SIDECAR_MAX_ANSWER_BYTES raised to 64 MiB, 8 parallel reads of a
// session holding 64 MiB stay inside the pod's limit too: each answer is
// counted against the same budget (cut shorter, with Sidecar-Truncated and
// a cursor, or refused with 503 overloaded), whatever the setting.
func TestRaisedAnswerCapStaysInsideThePodLimit(t *testing.T) {
	p := startLimited(t, fmt.Sprintf("SIDECAR_MAX_ANSWER_BYTES=%d", 64<<20))
	url := fmt.Sprintf("http://%s/v1/users/mem/sessions/big/messages", p.api)
	for i := range 8 {
		a, err := post(url, appendBody(fmt.Sprintf("part%d", i), 8, 1_040_000))
		if err != nil || a.status != 201 {
			t.Fatalf("append %d: %v %+v", i, err, a)
		}
	}
	t.Logf("peak RSS after the appends %.1f MiB", float64(peakRSS(t, p.cmd.Process.Pid))/(1<<20))
	const readers = 8
	var wg sync.WaitGroup
	type read struct {
		status    int
		code      string
		n         int
		truncated bool
		err       error
	}
	reads := make([]read, readers)
	for i := range readers {
		wg.Go(func() {
			c := http.Client{Timeout: 60 * time.Second}
			resp, err := c.Get(url + "?limit=1000")
			if err != nil {
				reads[i].err = err
				return
			}
			defer resp.Body.Close()
			var page struct {
				Messages []json.RawMessage `json:"messages"`
				Error    struct{ Code string }
			}
			reads[i].err = json.NewDecoder(resp.Body).Decode(&page)
			reads[i].status, reads[i].code, reads[i].n = resp.StatusCode, page.Error.Code, len(page.Messages)
			reads[i].truncated = resp.Header.Get("Sidecar-Truncated") == "true"
		})
	}
	wg.Wait()
	served := 0
	for i, r := range reads {
		switch {
		case r.err != nil:
			t.Errorf("read %d: %v", i, r.err)
		case r.status == 200 && r.n > 0 && (r.n == 64 || r.truncated):
			served++
		case r.status == 503 && r.code == "overloaded":
		default:
			t.Errorf("read %d: %d %q, %d messages (truncated %v): want 200 (whole, or cut with Sidecar-Truncated) or 503 overloaded", i, r.status, r.code, r.n, r.truncated)
		}
	}
	insidePod(t, p, served, fmt.Sprintf("%d of %d reads served", served, readers))
}

// insidePod checks that some requests were served and that the process's
// peak RSS stayed under the pod's limit.
func insidePod(t *testing.T, p *proc, served int, what string) {
	t.Helper()
	rss := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("%s; peak RSS %.1f MiB", what, float64(rss)/(1<<20))
	if served == 0 {
		t.Errorf("%s: none served", what)
	}
	if rss >= podLimit {
		t.Errorf("peak RSS %d bytes, want under the pod's %d", rss, podLimit)
	}
}
