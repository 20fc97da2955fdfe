package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/client"
)

// everyEventsOperation calls the events operations on the live sidecar (from
// TestEveryOperation): a custom event, abort and its clearing, the session's
// stream replayed from 0 through its deleted event, the user's stream.
func everyEventsOperation(t *testing.T, c *client.Client, u string) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const s = "ev-1"
	must(c.AppendEntry(ctx, u, s, client.AppendEntryRequest{QAID: "q1", Question: "q", Answer: "a"})).ok(t)
	id := must(c.PublishSessionEvent(ctx, u, s, client.CustomEvent{Event: "x-delta", Data: map[string]string{"text": "Hel"}})).ok(t)
	if id.ID == "" {
		t.Fatalf("PublishSessionEvent: %+v", id)
	}
	ab := must(c.RequestAbort(ctx, u, s)).ok(t)
	if time.Since(ab.AbortRequestedAt) > time.Minute {
		t.Fatalf("RequestAbort: %+v", ab)
	}
	if rec := must(c.GetSession(ctx, u, s)).ok(t); rec.AbortRequestedAt == nil {
		t.Fatalf("record without abort_requested_at: %+v", rec)
	}
	mustNil(t, c.ClearAbort(ctx, u, s))
	mustNil(t, c.DeleteSession(ctx, u, s))
	var got []string
	for ev, err := range c.GetSessionEvents(ctx, u, s, client.EventsOptions{After: "0"}) {
		if err != nil {
			t.Fatalf("GetSessionEvents: %v", err)
		}
		got = append(got, ev.Type)
	}
	// Only the tombstone is left after the delete: reconnected, deleted.
	if len(got) != 2 || got[0] != "reconnected" || got[1] != "deleted" {
		t.Fatalf("GetSessionEvents after the delete: %v", got)
	}
	for ev, err := range c.GetSessionEvents(ctx, u, "ev-unknown", client.EventsOptions{}) {
		if !client.IsNotFound(err) {
			t.Fatalf("GetSessionEvents of an unknown session: %+v %v, want a 404", ev, err)
		}
	}

	must(c.PatchUserState(ctx, u, map[string]any{"ev": 1})).ok(t)
	for ev, err := range c.GetUserEvents(ctx, u, client.EventsOptions{After: "0"}) {
		if err != nil {
			t.Fatalf("GetUserEvents: %v", err)
		}
		if ev.Type == "reconnected" {
			var r client.Reconnected
			if json.Unmarshal(ev.Data, &r) != nil || r.OldestID == nil {
				t.Fatalf("reconnected: %s", ev.Data)
			}
			continue
		}
		if ev.Type != "user_state_changed" || ev.ID == "" {
			t.Fatalf("GetUserEvents: %+v", ev)
		}
		break
	}
}

// cutTransport ends the first event stream's body right after its first
// event frame, as a dropped connection would, and records the
// Last-Event-ID of every stream request.
type cutTransport struct {
	streams int
	lastIDs []string
}

func (c *cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/events") || req.Method != http.MethodGet {
		return resp, err
	}
	c.streams++
	c.lastIDs = append(c.lastIDs, req.Header.Get("Last-Event-ID"))
	if c.streams == 1 {
		resp.Body = &cutBody{ReadCloser: resp.Body}
	}
	return resp, nil
}

// cutBody reads until it has passed one frame with an id, then says EOF.
type cutBody struct {
	io.ReadCloser
	seen strings.Builder
	done bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p[:1]) // a byte at a time: cut exactly
	b.seen.Write(p[:n])
	if _, rest, ok := strings.Cut(b.seen.String(), "id: "); ok && strings.HasSuffix(rest, "\n\n") {
		b.done = true
	}
	return n, err
}

// TestEventsReconnect: the iterator resumes with Last-Event-ID after the
// stream broke, losing nothing and repeating nothing, and ends after the
// deleted event.
func TestEventsReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tr := &cutTransport{}
	c := client.New(sidecarURL, client.WithHTTPClient(&http.Client{Transport: tr}))
	const u, s = "t-reconnect", "s1"
	must(c.AppendEntry(ctx, u, s, client.AppendEntryRequest{QAID: "q0", Question: "q", Answer: "a"})).ok(t)
	for i := range 3 {
		must(c.PublishSessionEvent(ctx, u, s, client.CustomEvent{Event: "x-n", Data: i})).ok(t)
	}
	var got []string
	var firstID string
	xs := 0
	for ev, err := range c.GetSessionEvents(ctx, u, s, client.EventsOptions{After: "0", Retry: 10 * time.Millisecond}) {
		if err != nil {
			got = append(got, "error")
			continue
		}
		got = append(got, ev.Type)
		switch ev.Type {
		case "entry_appended":
			firstID = ev.ID
		case "x-n":
			if xs++; xs == 3 {
				mustNil(t, c.DeleteSession(ctx, u, s)) // its deleted event ends the stream
			}
		}
	}
	want := []string{"reconnected", "entry_appended", "error", "reconnected", "x-n", "x-n", "x-n", "deleted"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if wantIDs := []string{"0", firstID}; !slices.Equal(tr.lastIDs, wantIDs) {
		t.Fatalf("Last-Event-ID sent %q, want %q", tr.lastIDs, wantIDs)
	}
}
