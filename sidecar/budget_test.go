package sidecar_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
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

// holding counts the requests of POST /v1/hold that read their body and
// wait for the test's release.
var (
	holding     atomic.Int64
	holdRelease atomic.Pointer[chan struct{}]
)

// holdFactory: POST /v1/hold reads its body, then waits for the test;
// GET /v1/answer reserves an answer of ?max= bytes and says the cap it got.
var holdFactory = sidecar.Factory{Name: "hold", New: func(_ context.Context, _ sidecar.Deps) (sidecar.Module, error) {
	return holdModule{}, nil
}}

type holdModule struct{}

func (holdModule) Name() string { return "hold" }

func (holdModule) Routes() []sidecar.Route {
	return []sidecar.Route{
		{Pattern: "POST /v1/hold", Handler: func(w http.ResponseWriter, r *http.Request) error {
			var v any
			if err := sidecar.DecodeJSON(r, &v); err != nil {
				return err
			}
			holding.Add(1)
			defer holding.Add(-1)
			select {
			case <-*holdRelease.Load():
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusNoContent)
			return nil
		}, Timeout: 30 * time.Second},
		{Pattern: "GET /v1/answer", Query: []string{"max"}, Handler: func(w http.ResponseWriter, r *http.Request) error {
			want, _ := strconv.Atoi(r.URL.Query().Get("max"))
			limit, done, err := sidecar.ReserveAnswer(r.Context(), want)
			if err != nil {
				return err
			}
			done(0)
			sidecar.WriteJSON(w, http.StatusOK, map[string]int{"limit": limit})
			return nil
		}},
	}
}

func jsonBody(n int) []byte {
	return append(append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), n)...), '"', '}')
}

// chunked hides the length of b from the client: the body is sent chunked.
type chunked struct{ io.Reader }

// Bodies in flight are held by SIDECAR_INFLIGHT_BYTES: while one request
// holds most of the budget, another body (announced or chunked) is
// answered 503 overloaded with Retry-After, and counted; once it is
// released, the same body is served. An answer's cap is cut to a quarter
// of the budget, and refused too while the budget is held.
func TestInflightBytesBudget(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), envconf.Env{"SIDECAR_INFLIGHT_BYTES": strconv.Itoa(8 << 20), "SIDECAR_MAX_BODY_BYTES": strconv.Itoa(2 << 20),
		"SIDECAR_REQUEST_TIMEOUT": "2s"}, holdFactory) // an answer waits for room within its deadline
	release := make(chan struct{})
	holdRelease.Store(&release)
	var wg sync.WaitGroup
	wg.Go(func() { do(t, "POST", th.API+"/v1/hold", string(jsonBody(1_300_000))) }) // 7.8 MB of 8.4 counted
	waitFor(t, func() bool { return holding.Load() == 1 })

	post := func(body io.Reader) *http.Response {
		t.Helper()
		resp, err := http.Post(th.API+"/v1/hold", "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		name string
		body func() io.Reader
	}{
		{"announced", func() io.Reader { return bytes.NewReader(jsonBody(900_000)) }},
		{"chunked", func() io.Reader { return chunked{bytes.NewReader(jsonBody(900_000))} }},
	} {
		resp := post(tc.body())
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s body past the budget: got %d (Retry-After %q), want 503 with Retry-After", tc.name, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	r := do(t, "GET", th.API+"/v1/answer?max="+strconv.Itoa(64<<20), "")
	if r.Status != 503 || r.Code() != "overloaded" {
		t.Errorf("answer while the budget is held: got %d %s, want 503 overloaded", r.Status, r.Body)
	}
	m := do(t, "GET", th.Ops+"/metrics", "")
	if !strings.Contains(m.Body, `sidecar_http_overloaded_total{reason="bytes"} 3`) {
		t.Errorf("metrics lack the 3 refusals:\n%s", grepLines(m.Body, "overloaded"))
	}
	close(release)
	wg.Wait()

	fresh := make(chan struct{})
	close(fresh)
	holdRelease.Store(&fresh)
	for _, body := range []io.Reader{bytes.NewReader(jsonBody(900_000)), chunked{bytes.NewReader(jsonBody(900_000))}} {
		if resp := post(body); resp.StatusCode != 204 {
			t.Errorf("body with the budget free: got %d, want 204", resp.StatusCode)
		}
	}
	r = do(t, "GET", th.API+"/v1/answer?max="+strconv.Itoa(64<<20), "")
	if want := `{"limit":699050}`; r.Status != 200 || strings.TrimSpace(r.Body) != want {
		t.Errorf("a 64 MiB answer under an 8 MiB budget: got %d %s, want %s (a quarter of the budget, 3 bytes held per byte)", r.Status, r.Body, want)
	}
	m = do(t, "GET", th.Ops+"/metrics", "")
	if !strings.Contains(m.Body, "sidecar_inflight_bytes 0\n") {
		t.Errorf("bytes still counted with nothing in flight:\n%s", grepLines(m.Body, "inflight_bytes"))
	}
}

// A body the whole budget could never hold is 413 (a retry would not
// help), announced or chunked, and the start warns about a body limit
// past it.
func TestBodyPastTheWholeBudgetIs413(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), envconf.Env{"SIDECAR_INFLIGHT_BYTES": strconv.Itoa(8 << 20), "SIDECAR_MAX_BODY_BYTES": strconv.Itoa(2 << 20)}, holdFactory)
	fresh := make(chan struct{})
	close(fresh)
	holdRelease.Store(&fresh)
	for _, body := range []io.Reader{bytes.NewReader(jsonBody(1_500_000)), chunked{bytes.NewReader(jsonBody(1_500_000))}} {
		resp, err := http.Post(th.API+"/v1/hold", "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(string(b), "SIDECAR_INFLIGHT_BYTES") {
			t.Errorf("a 1.5 MB body (9 MB counted) under an 8 MiB budget: got %d %s, want 413 naming SIDECAR_INFLIGHT_BYTES", resp.StatusCode, b)
		}
	}
	if resp := do(t, "POST", th.API+"/v1/hold", string(jsonBody(1_000_000))); resp.Status != 204 {
		t.Errorf("a 1 MB body: %d, want 204", resp.Status)
	}
}

// A body announced by Content-Length is counted once its first bytes
// arrive: a client that sends the headers of a big body and then nothing
// holds no share of the budget that other requests would wait behind (its
// read deadline answers it 408).
func TestStalledBodyHoldsNoBudget(t *testing.T) {
	th := sidecartest.Start(t, redisstoretest.New(t), envconf.Env{"SIDECAR_INFLIGHT_BYTES": strconv.Itoa(8 << 20), "SIDECAR_MAX_BODY_BYTES": strconv.Itoa(2 << 20),
		"SIDECAR_REQUEST_TIMEOUT": "2s"}, holdFactory)
	release := make(chan struct{})
	defer close(release)
	holdRelease.Store(&release)
	conn, err := net.Dial("tcp", strings.TrimPrefix(th.API, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 7.8 MB of the 8.4 MB budget, were it counted now
	if _, err := fmt.Fprintf(conn, "POST /v1/hold HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 1_300_000); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the headers are read; no body byte comes
	r := do(t, "GET", th.API+"/v1/answer?max="+strconv.Itoa(64<<20), "")
	if r.Status != 200 {
		t.Errorf("an answer beside a stalled 1.3 MB body: got %d %s, want 200", r.Status, r.Body)
	}
	m := do(t, "GET", th.Ops+"/metrics", "")
	if !strings.Contains(m.Body, "sidecar_inflight_bytes 0\n") {
		t.Errorf("a stalled body holds budget:\n%s", grepLines(m.Body, "inflight_bytes"))
	}
}
