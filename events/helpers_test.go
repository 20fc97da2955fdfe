package events_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/events"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

// start runs a host with every session-writing module and events; a 1 s
// heartbeat unless env says otherwise.
func start(t *testing.T, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	full := envconf.Env{"SIDECAR_SSE_HEARTBEAT": "1s"}
	for k, v := range env {
		full[k] = v
	}
	return sidecartest.Start(t, srv, full, sessions.Factory, ttl.Factory, usage.Factory, registry.Factory, events.Factory)
}

// always is the env of a test that reads what every write recorded
// (SESSION_EVENTS=always, as before recording followed watchers).
var always = envconf.Env{"SESSION_EVENTS": "always"}

// frame is one SSE frame: an event, a comment, or the retry line.
type frame struct {
	ID, Event, Data, Comment, Retry string
}

// stream is an open GET .../events.
type stream struct {
	Status int
	Header http.Header
	frames chan frame
	cancel context.CancelFunc
	done   chan struct{} // closed when the server ended the stream
}

// open GETs path (with Last-Event-ID when lastID is set) and parses frames
// until the stream ends or the test does.
func open(t *testing.T, base, path, lastID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	s := &stream{Status: resp.StatusCode, Header: resp.Header, frames: make(chan frame, 100000), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var f frame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				s.frames <- f
				f = frame{}
			case strings.HasPrefix(line, ":"):
				f.Comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "id: "):
				f.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				f.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				// several data lines are one value joined by "\n" (as
				// every SSE client joins them)
				if f.Data != "" {
					f.Data += "\n"
				}
				f.Data += line[6:]
			case line == "data" || line == "data:":
				f.Data += "\n"
			case strings.HasPrefix(line, "retry: "):
				f.Retry = line[7:]
			}
		}
	}()
	return s
}

// first reads the stream's first frame (the retry line), failing when the
// stream was refused or ended first, or after 10 s: a test never waits
// for a frame without a bound.
func (s *stream) first(t *testing.T) frame {
	t.Helper()
	if s.Status != http.StatusOK {
		t.Fatalf("the stream answered %d, want 200", s.Status)
	}
	select {
	case f := <-s.frames:
		return f
	case <-s.done:
		select {
		case f := <-s.frames:
			return f
		default:
		}
		t.Fatal("the stream ended before its first frame")
	case <-time.After(10 * time.Second):
		t.Fatal("no first frame within 10 s")
	}
	return frame{}
}

// next returns the next event frame (skipping keepalives), failing after d.
func (s *stream) next(t *testing.T, d time.Duration) frame {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case f := <-s.frames:
			if f.Comment != "" && f.Event == "" {
				continue
			}
			return f
		case <-s.done:
			select {
			case f := <-s.frames:
				if f.Comment != "" && f.Event == "" {
					continue
				}
				return f
			default:
			}
			t.Fatalf("stream ended, want another event")
		case <-deadline:
			t.Fatalf("no event within %s", d)
		}
	}
}

// ended waits until the server ends the stream (remaining frames dropped).
func (s *stream) ended(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(d):
		t.Fatalf("stream still open after %s", d)
	}
}

// events reads the types of the next n events.
func (s *stream) events(t *testing.T, n int) []frame {
	t.Helper()
	out := make([]frame, n)
	for i := range out {
		out[i] = s.next(t, 10*time.Second)
	}
	return out
}

func types(fs []frame) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Event
	}
	return out
}

// xtypes reads the event types of stream key in Redis (a test's bounded read).
func xtypes(t *testing.T, srv *redisstoretest.Server, key string) []string {
	t.Helper()
	c := srv.Client(t)
	entries, err := c.Do(t.Context(), c.B().Xrange().Key(key).Start("-").End("+").Count(10000).Build()).AsXRange()
	if err != nil {
		t.Fatalf("xrange %s: %v", key, err)
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.FieldValues["t"]
	}
	return out
}
