package sidecar_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// A stalled request gets 408 with the error envelope at
// SIDECAR_READ_TIMEOUT, whatever stalls:
// headers then no body, a chunk announced and never sent, a body trickling
// in. Its answer is written even when the write deadline (from the same
// moment, here as long as the read deadline) has passed too.
func TestStalledRequestsGet408(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), envconf.Env{"SIDECAR_READ_TIMEOUT": "1s", "SIDECAR_WRITE_TIMEOUT": "1s"}, echoFactory)
	const head = "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	tests := []struct {
		name, send string
		trickle    bool
	}{
		{"headers then no body", head + "Content-Length: 20\r\n\r\n", false},
		{"a huge chunk never sent", head + "Transfer-Encoding: chunked\r\n\r\nffffffffff\r\n{", false},
		{"a body trickling in", head + "Content-Length: 200\r\n\r\n{", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(th.API, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprint(conn, tc.send)
			if tc.trickle {
				go func() {
					for range 100 {
						time.Sleep(200 * time.Millisecond)
						if _, err := conn.Write([]byte(" ")); err != nil {
							return
						}
					}
				}()
			}
			_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second)) // a bound for the test, far above the 1 s setting
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer before the connection ended: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"request_timeout"`) {
				t.Fatalf("got %d %s, want 408 request_timeout", resp.StatusCode, body)
			}
			// and the connection is closed: it is not held for as long as
			// the client likes
			if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the connection is still open after the 408 (%v)", err)
			}
		})
	}
}

// With the API connection cap reached by idle connections, the oldest idle
// ones are shed so a new caller is served, and the ops listener answers.
func TestIdleConnectionsAreShedAtTheCap(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), envconf.Env{"SIDECAR_MAX_CONNECTIONS": "8"}, kvFactory(nil))
	addr := strings.TrimPrefix(th.API, "http://")
	var idle []net.Conn
	for range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	client := &http.Client{Timeout: 20 * time.Second}
	for i := range 5 {
		resp, err := client.Get(th.API + "/v1/kv/absent")
		if err != nil {
			t.Fatalf("request %d with 40 idle connections at a cap of 8: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("request %d: got %d, want 404", i, resp.StatusCode)
		}
	}
	if r := do(t, "GET", th.Ops+"/healthz", ""); r.Status != 200 {
		t.Fatalf("healthz: %d", r.Status)
	}
	// The shed connections were closed by the server: reading them ends.
	closed := 0
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed == 0 {
		t.Fatal("no idle connection was shed")
	}
}

// Slow uploads cannot lock a new client out: with the connection cap held
// by bodies trickling in at a few bytes a second (and more waiting in the
// accept queue), a new client's request is served long before the read
// deadline, because the slowest uploads are ended with 408 to make room.
func TestSlowUploadsAreShedForANewClient(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), envconf.Env{"SIDECAR_MAX_CONNECTIONS": "8"}, echoFactory)
	addr := strings.TrimPrefix(th.API, "http://")
	const uploaders = 12 // 8 at the cap, 4 waiting behind it
	answered := make(chan int, uploaders)
	var stop atomic.Bool
	defer stop.Store(true)
	for range uploaders {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
		go func() { // 3 bytes a second
			for !stop.Load() {
				time.Sleep(300 * time.Millisecond)
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(40 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				answered <- 0
				return
			}
			resp.Body.Close()
			answered <- resp.StatusCode
		}()
	}
	time.Sleep(500 * time.Millisecond) // the uploads are under way
	// well under SIDECAR_READ_TIMEOUT (30 s), which would end the uploads anyway
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post(th.API+"/v1/echo", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatalf("a new client with the cap held by slow uploads: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a new client: got %d, want 200", resp.StatusCode)
	}
	m := do(t, "GET", th.Ops+"/metrics", "")
	if !strings.Contains(m.Body, `sidecar_http_connections_shed_total{state="slow_upload"}`) {
		t.Fatalf("no slow upload was shed:\n%s", grepLines(m.Body, "shed"))
	}
	// a shed upload reads its 408 (a connection still waiting to be read
	// when it was shed is closed as an idle one is)
	var got []int
	for len(got) < uploaders {
		got = append(got, <-answered)
		if got[len(got)-1] == http.StatusRequestTimeout {
			return
		}
	}
	t.Fatalf("the uploads were answered %v, none 408", got)
}

// At the cap with no one waiting, idle connections are kept: a connection is
// shed only to make room for a client that connects.
func TestIdleConnectionsAreKeptWhenNoOneWaits(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), envconf.Env{"SIDECAR_MAX_CONNECTIONS": "8"}, kvFactory(nil))
	addr := strings.TrimPrefix(th.API, "http://")
	get := func(c net.Conn, r *bufio.Reader) error {
		if _, err := fmt.Fprintf(c, "GET /v1/kv/absent HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	conns := make([]net.Conn, 8)
	readers := make([]*bufio.Reader, 8)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i], readers[i] = c, bufio.NewReader(c)
		if err := get(c, readers[i]); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	time.Sleep(300 * time.Millisecond) // the accept loop has long come round again
	for i, c := range conns {
		if err := get(c, readers[i]); err != nil {
			t.Fatalf("connection %d after a pause at the cap: %v (shed with no one waiting)", i, err)
		}
	}
}

// At SIDECAR_MAX_INFLIGHT requests in flight, the next is answered 503
// overloaded at once, with Retry-After, and counted.
func TestOverloadAnswers503(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), envconf.Env{"SIDECAR_MAX_INFLIGHT": "2"}, slowFactory)
	release := make(chan struct{})
	slowRelease.Store(&release)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { do(t, "GET", th.API+"/v1/slow", "") })
	}
	waitFor(t, func() bool { return slowInflight.Load() == 2 })
	r := do(t, "GET", th.API+"/v1/slow", "")
	close(release)
	wg.Wait()
	if r.Status != 503 || r.Code() != "overloaded" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: got %d %s (Retry-After %q), want 503 overloaded with Retry-After", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	m := do(t, "GET", th.Ops+"/metrics", "")
	if !strings.Contains(m.Body, `sidecar_http_overloaded_total{reason="inflight"} 1`) {
		t.Fatalf("metrics lack the overload count:\n%s", grepLines(m.Body, "overloaded"))
	}
}

// An API answers JSON always: an unclean path is the JSON 404, not an HTML
// redirect; a 405 is counted under its route, not "unmatched".
func TestUncleanPathAnd405(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), nil, kvFactory(nil))
	for _, p := range []string{"//v1/kv/a", "/v1/./kv/a", "/v1/kv/../kv/a"} {
		req, _ := http.NewRequest("GET", th.API+p, nil)
		req.URL.Opaque = p // send the path as written
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(b), `"not_found"`) {
			t.Fatalf("GET %s: got %d %s %s, want the JSON 404", p, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	if r := do(t, "DELETE", th.API+"/v1/kv/a", ""); r.Status != 405 || r.Code() != "method_not_allowed" {
		t.Fatalf("DELETE: got %d %s, want 405", r.Status, r.Body)
	}
	m := do(t, "GET", th.Ops+"/metrics", "")
	if !strings.Contains(m.Body, `sidecar_http_requests_total{code="405",route="/v1/kv/{key}"} 1`) {
		t.Fatalf("the 405 is not counted under its route:\n%s", grepLines(m.Body, `code="405"`))
	}
}

// A body over SIDECAR_MAX_BODY_BYTES gets the 413 envelope, never a
// connection reset while the client is still sending, from Go's client and
// from Python's urllib, again and again.
func TestOverLimitBodyGets413NotAReset(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), nil, echoFactory)
	big := bytes.Repeat([]byte("a"), 2<<20)
	for i := range 30 {
		body := append(append([]byte(`{"x":"`), big...), '"', '}')
		resp, err := http.Post(th.API+"/v1/echo", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("Go POST %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(string(b), `"body_too_large"`) {
			t.Fatalf("Go POST %d: got %d %s", i, resp.StatusCode, b)
		}
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 not on PATH")
		}
		t.Skip("python3 not on PATH")
	}
	script := `
import sys, urllib.request, urllib.error
url = sys.argv[1]
data = b'{"x":"' + b"a" * (2 << 20) + b'"}'
for i in range(30):
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req)
        print("no error"); sys.exit(1)
    except urllib.error.HTTPError as e:
        if e.code != 413:
            print("status", e.code); sys.exit(1)
print("30 x 413")
`
	out, err := exec.Command(python, "-c", script, th.API+"/v1/echo").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "30 x 413") {
		t.Fatalf("python urllib: %v\n%s", err, out)
	}
}

// slowModule holds GET /v1/slow open until the test releases it.
var (
	slowInflight atomic.Int64
	slowRelease  atomic.Pointer[chan struct{}]
)

// funcModule is a module of one route.
type funcModule struct {
	name  string
	route sidecar.Route
}

func (m funcModule) Name() string            { return m.name }
func (m funcModule) Routes() []sidecar.Route { return []sidecar.Route{m.route} }

func funcFactory(name, pattern string, h sidecar.HandlerFunc) sidecar.Factory {
	return sidecar.Factory{Name: name, New: func(context.Context, sidecar.Deps) (sidecar.Module, error) {
		return funcModule{name, sidecar.Route{Pattern: pattern, Handler: h}}, nil
	}}
}

var slowFactory = funcFactory("slow", "GET /v1/slow", func(w http.ResponseWriter, r *http.Request) error {
	slowInflight.Add(1)
	defer slowInflight.Add(-1)
	select {
	case <-*slowRelease.Load():
	case <-r.Context().Done():
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
})

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not met within 10s")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
