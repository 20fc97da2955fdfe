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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// waitModule has the kinds of request a shutdown meets: a wait that
// watches Deps.ShuttingDown, a wait that honours only its request's
// context, and short work the test ends itself.
type waitModule struct {
	shuttingDown <-chan struct{}
	entered      chan string   // a handler's name once it waits or works
	release      chan struct{} // ends the short work
}

func (m *waitModule) Name() string { return "wait" }

func (m *waitModule) Routes() []sidecar.Route {
	return []sidecar.Route{
		{Pattern: "POST /v1/wait", Handler: m.wait, Timeout: time.Minute},
		{Pattern: "GET /v1/ctxwait", Handler: m.ctxWait, Timeout: time.Minute},
		{Pattern: "GET /v1/work", Handler: m.work},
	}
}

func (m *waitModule) wait(w http.ResponseWriter, r *http.Request) error {
	var body struct{}
	if err := sidecar.DecodeOptionalJSON(r, &body); err != nil {
		return err
	}
	m.entered <- "wait"
	select {
	case <-m.shuttingDown:
		return sidecar.ErrShuttingDown
	case <-r.Context().Done():
		return r.Context().Err()
	case <-time.After(time.Minute):
		sidecar.WriteJSON(w, http.StatusOK, map[string]string{"waited": "1m"})
		return nil
	}
}

func (m *waitModule) ctxWait(w http.ResponseWriter, r *http.Request) error {
	m.entered <- "ctxwait"
	<-r.Context().Done()
	return r.Context().Err()
}

func (m *waitModule) work(w http.ResponseWriter, r *http.Request) error {
	m.entered <- "work"
	<-m.release
	sidecar.WriteJSON(w, http.StatusOK, map[string]string{"worked": "yes"})
	return nil
}

func waitFactory(m *waitModule) sidecar.Factory {
	return sidecar.Factory{Name: "wait", New: func(_ context.Context, d sidecar.Deps) (sidecar.Module, error) {
		m.shuttingDown = d.ShuttingDown
		return m, nil
	}}
}

// closeModule records the context its Close got, or fails to close: with
// an error, or by never returning (it ignores its context).
type closeModule struct {
	name  string
	err   error
	stuck chan struct{} // when set, Close blocks until it is closed
	got   chan closeCall
}

type closeCall struct {
	at       time.Time
	err      error // the context's, when Close began
	deadline time.Time
}

func (m *closeModule) Name() string            { return m.name }
func (m *closeModule) Routes() []sidecar.Route { return nil }

func (m *closeModule) Close(ctx context.Context) error {
	d, _ := ctx.Deadline()
	m.got <- closeCall{at: time.Now(), err: ctx.Err(), deadline: d}
	if m.stuck != nil {
		<-m.stuck
	}
	return m.err
}

func closeFactory(m *closeModule) sidecar.Factory {
	m.got = make(chan closeCall, 1)
	return sidecar.Factory{Name: m.name, New: func(context.Context, sidecar.Deps) (sidecar.Module, error) { return m, nil }}
}

// logBuffer is the process log of a sidecar run by runSidecar.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ran is a sidecar run by sidecar.Run, as Main runs it: its log is the
// process's.
type ran struct {
	api, ops string // base URLs
	log      *logBuffer
	stop     context.CancelFunc // SIGTERM
	done     chan error
}

func runSidecar(t *testing.T, factories ...sidecar.Factory) *ran {
	t.Helper()
	apiPort, _ := redisstoretest.FreePort()
	opsPort, _ := redisstoretest.FreePort()
	env := envconf.Env{"REDIS_URL": redisstoretest.New(t).URL(),
		"SIDECAR_LISTEN_ADDR": fmt.Sprintf("127.0.0.1:%d", apiPort), "SIDECAR_OPS_ADDR": fmt.Sprintf("127.0.0.1:%d", opsPort)}
	ctx, cancel := context.WithCancel(context.Background())
	r := &ran{api: "http://" + env["SIDECAR_LISTEN_ADDR"], ops: "http://" + env["SIDECAR_OPS_ADDR"], log: &logBuffer{}, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- sidecar.Run(ctx, env, r.log, factories) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
		if t.Failed() {
			t.Logf("sidecar log:\n%s", r.log)
		}
	})
	sidecartest.NewClient(t, r.ops).WaitServing(t, "/readyz", 15*time.Second)
	return r
}

// exit waits for Run's result after stop.
func (r *ran) exit(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of shutdown")
		return nil
	}
}

// checkCleanStop fails unless the log's last line is "stopped" and no
// request lost its connection.
func checkCleanStop(t *testing.T, log string) {
	t.Helper()
	if strings.Contains(log, "cut off") {
		t.Errorf("requests were cut off:\n%s", log)
	}
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"msg":"stopped"`) {
		t.Errorf("last log line %q, want the \"stopped\" line", last)
	}
}

func isShuttingDown(r sidecartest.Reply) bool {
	return r.Err == nil && r.Status == http.StatusServiceUnavailable && r.Code() == "shutting_down" && r.Header.Get("Retry-After") != ""
}

// On SIGTERM a handler waiting on Deps.ShuttingDown answers 503
// shutting_down at once, short work under way finishes normally, a request
// arriving during the drain gets 503 shutting_down (the listener is still
// open), /readyz says not ready; then every module closes and "stopped"
// is the last line of a log without warnings.
func TestShutdownAnswersWaitsFinishesWorkRefusesNewRequests(t *testing.T) {
	m := &waitModule{entered: make(chan string, 4), release: make(chan struct{})}
	tidy := &closeModule{name: "tidy"}
	r := runSidecar(t, waitFactory(m), closeFactory(tidy))
	c := sidecartest.NewClient(t, r.api)

	waited := make(chan sidecartest.Reply, 1)
	go func() { waited <- c.Send(context.Background(), "POST", "/v1/wait", "") }()
	worked := make(chan sidecartest.Reply, 1)
	go func() { worked <- c.Send(context.Background(), "GET", "/v1/work", "") }()
	for range 2 {
		<-m.entered
	}
	r.stop()

	if w := <-waited; !isShuttingDown(w) {
		t.Fatalf("waiting request at shutdown: %s %v, want 503 shutting_down with Retry-After", w, w.Header)
	}
	// The work is still under way, so the drain goes on: a new request,
	// on a new connection, is answered.
	late := sidecartest.NewClient(t, r.api).Send(context.Background(), "GET", "/v1/work", "")
	if !isShuttingDown(late) {
		t.Errorf("request arriving during the drain: %s %v, want 503 shutting_down with Retry-After", late, late.Header)
	}
	ready := sidecartest.NewClient(t, r.ops).Send(context.Background(), "GET", "/readyz", "")
	if ready.Status != http.StatusServiceUnavailable || !strings.Contains(ready.Body, "shutting down") {
		t.Errorf("/readyz during the drain: %s, want 503 saying it shuts down", ready)
	}
	close(m.release)
	if w := <-worked; w.Err != nil || w.Status != http.StatusOK {
		t.Errorf("short work under way at shutdown: %s, want 200", w)
	}
	if err := r.exit(t); err != nil {
		t.Fatalf("Run: %v, want nil", err)
	}
	call := <-tidy.got
	if call.err != nil || call.deadline.IsZero() {
		t.Errorf("Close got a context with err %v, deadline %v; want a live one with a deadline", call.err, call.deadline)
	}
	log := r.log.String()
	checkCleanStop(t, log)
	_, shutdown, _ := strings.Cut(log, `"msg":"shutting down"`)
	if strings.Contains(shutdown, `"level":"WARN"`) || strings.Contains(shutdown, `"level":"ERROR"`) {
		t.Errorf("the shutdown logged warnings:\n%s", log)
	}
}

// A request still running near the end of the drain (ShutdownGrace) has
// its context cancelled with cause ErrShuttingDown: a handler that honours
// only its context, and a body still arriving, both answer 503
// shutting_down instead of losing their connection. The modules close
// after with a deadline of their own, past the drain's.
func TestShutdownAnswersWhatStillRunsAtTheEndOfTheDrain(t *testing.T) {
	t.Parallel()
	m := &waitModule{entered: make(chan string, 4), release: make(chan struct{})}
	tidy := &closeModule{name: "tidy"}
	r := runSidecar(t, waitFactory(m), closeFactory(tidy))
	c := sidecartest.NewClient(t, r.api)

	waited := make(chan sidecartest.Reply, 1)
	go func() { waited <- c.Send(context.Background(), "GET", "/v1/ctxwait", "") }()
	<-m.entered

	// A body announced as 100 bytes, of which 3 arrive.
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.api, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/wait HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a")
	eventually(t, 10*time.Second, "the upload holds its bytes", func() bool {
		return !strings.Contains(do(t, "GET", r.ops+"/metrics", "").Body, "\nsidecar_inflight_bytes 0\n")
	})

	stopped := time.Now()
	r.stop()
	if w := <-waited; !isShuttingDown(w) {
		t.Errorf("request honouring its context: %s %v, want 503 shutting_down with Retry-After", w, w.Header)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the upload got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"shutting_down"`) || resp.Header.Get("Retry-After") == "" {
		t.Errorf("upload under way: %d %v %s, want 503 shutting_down with Retry-After", resp.StatusCode, resp.Header, body)
	}
	if err := r.exit(t); err != nil {
		t.Fatalf("Run: %v, want nil", err)
	}
	call := <-tidy.got
	if call.err != nil || !call.deadline.After(stopped.Add(sidecar.ShutdownGrace)) {
		t.Errorf("Close got err %v, deadline %v after SIGTERM; want its own deadline, past the drain's %v",
			call.err, call.deadline.Sub(stopped), sidecar.ShutdownGrace)
	}
	log := r.log.String()
	checkCleanStop(t, log)
	if !strings.Contains(log, "answered 503 shutting_down") {
		t.Errorf("the log does not say requests were cancelled at the end of the drain:\n%s", log)
	}
}

// Each module closes with a context of its own: one that fails and one that
// never returns are logged by name, and hold up neither the others nor the
// exit.
func TestShutdownClosesEachModuleOnItsOwn(t *testing.T) {
	t.Parallel()
	stuck := &closeModule{name: "stuck", stuck: make(chan struct{})}
	defer close(stuck.stuck)
	failing := &closeModule{name: "failing", err: errors.New("cannot let go")}
	tidy := &closeModule{name: "tidy"}
	r := runSidecar(t, closeFactory(stuck), closeFactory(failing), closeFactory(tidy))
	r.stop()
	if err := r.exit(t); err != nil {
		t.Fatalf("Run: %v, want nil", err)
	}
	for _, m := range []*closeModule{stuck, failing, tidy} {
		if call := <-m.got; call.err != nil {
			t.Errorf("%s: Close got a context already done (%v)", m.name, call.err)
		}
	}
	log := r.log.String()
	for _, want := range []string{
		`"msg":"module close failed","module":"stuck","err":"Close did not return within ` + sidecar.CloseTimeout.String(),
		`"msg":"module close failed","module":"failing","err":"cannot let go"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, `"module":"tidy","err"`) {
		t.Errorf("the tidy module's close is reported failed:\n%s", log)
	}
	checkCleanStop(t, log)
}
