package events_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/events"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// TestMultilineData: a message's raw fields are stored as sent, so the
// stored JSON (and its event's data) may hold line breaks between tokens;
// the event still reaches the client as that whole JSON value, not cut at
// its first line break (an SSE data line ends at CR or LF).
func TestMultilineData(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, map[string]string{"SIDECAR_SSE_HEARTBEAT": "1s"}, messages.Factory, events.Factory)
		if r := h.Do(t, "POST", base+"/messages", `{"id":"m0","role":"user","content":"hi"}`); r.Status != 201 {
			t.Fatalf("first message: %d %s", r.Status, r.Body)
		}
		s := open(t, h.API, base+"/events", "")
		s.first(t) // retry
		body := "{\"id\":\"m1\",\"role\":\"assistant\",\"parts\":[\n  {\"type\":\"text\",\r\n   \"text\":\"one\"},\r  {\"type\":\"text\",\"text\":\"two\"}\n]}"
		if r := h.Do(t, "POST", base+"/messages", body); r.Status != 201 {
			t.Fatalf("message with line breaks: %d %s", r.Status, r.Body)
		}
		f := s.next(t, 10*time.Second)
		var got struct {
			ID    string `json:"id"`
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		}
		if f.Event != "message_appended" || json.Unmarshal([]byte(f.Data), &got) != nil {
			t.Fatalf("got event %q data %q, want message_appended with the stored message's JSON", f.Event, f.Data)
		}
		if got.ID != "m1" || len(got.Parts) != 2 || got.Parts[1].Text != "two" {
			t.Fatalf("got %+v, want m1 with both parts", got)
		}
	})
}

// TestFreshStreamStartsNow: a stream opened without an id starts with the
// next write even when this sidecar's reader is behind the stream (an event
// whose wake-up it missed, read at the next heartbeat): the new subscriber
// does not get that older event, the one already watching does.
func TestFreshStreamStartsNow(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SIDECAR_SSE_HEARTBEAT": "2m"})
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		a := open(t, h.API, base+"/events", "")
		a.first(t) // retry
		// an event the reader is not woken for (as after a lost Pub/Sub
		// message): only a heartbeat's re-read would find it
		c := srv.Client(t)
		key := srv.Layout().SessionEvents("u1", "s1")
		if err := c.Do(t.Context(), c.B().Xadd().Key(key).Id("*").FieldValue().FieldValue("t", "x-missed").FieldValue("d", "0").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		b := open(t, h.API, base+"/events", "")
		b.first(t) // retry
		if r := h.Do(t, "POST", base+"/events", `{"event":"x-next","data":1}`); r.Status != 201 {
			t.Fatalf("publish: %d %s", r.Status, r.Body)
		}
		if got := types(a.events(t, 2)); !slices.Equal(got, []string{"x-missed", "x-next"}) {
			t.Fatalf("the stream open before: %v, want [x-missed x-next]", got)
		}
		if f := b.next(t, 10*time.Second); f.Event != "x-next" {
			t.Fatalf("the stream opened after x-missed: first event %+v, want x-next", f)
		}
	})
}

// TestTrimmedUnderLiveReader: when the stream is trimmed past what this
// sidecar's reader delivered last (more events than SESSION_EVENTS_MAXLEN
// between two reads, as with lost wake-ups), a live subscriber is not fed
// what is left as if nothing were missing: its stream ends, and it resumes
// with its id to learn of the gap.
func TestTrimmedUnderLiveReader(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SIDECAR_SSE_HEARTBEAT": "2m", "SESSION_EVENTS_MAXLEN": "10"})
		h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a","qa_id":"q1"}`)
		s := open(t, h.API, base+"/events", "")
		s.first(t) // retry
		if r := h.Do(t, "POST", base+"/events", `{"event":"x-seen","data":0}`); r.Status != 201 {
			t.Fatalf("publish: %d %s", r.Status, r.Body)
		}
		seen := s.next(t, 10*time.Second)
		if seen.Event != "x-seen" {
			t.Fatalf("got %+v, want x-seen", seen)
		}
		// 300 events the reader is not woken for, trimmed as the scripts
		// trim, in one transaction: a wake-up still on its way (x-seen's
		// Pub/Sub message after its channel's confirmation had the stream
		// read already) reads before or after all of them, never between.
		c := srv.Client(t)
		key := srv.Layout().SessionEvents("u1", "s1")
		cmds := rueidis.Commands{c.B().Multi().Build()}
		for i := range 300 {
			cmds = append(cmds, c.B().Xadd().Key(key).Maxlen().Almost().Threshold("10").Id("*").FieldValue().FieldValue("t", "x-missed").FieldValue("d", fmt.Sprint(i)).Build())
		}
		cmds = append(cmds, c.B().Exec().Build())
		for _, r := range c.DoMulti(t.Context(), cmds...) {
			if err := r.Error(); err != nil {
				t.Fatal(err)
			}
		}
		if r := h.Do(t, "POST", base+"/events", `{"event":"x-next","data":1}`); r.Status != 201 {
			t.Fatalf("publish: %d %s", r.Status, r.Body)
		}
		deadline := time.After(10 * time.Second)
		for ended := false; !ended; {
			select {
			case f := <-s.frames:
				if f.Event != "" {
					t.Fatalf("got %s %s after events were trimmed unseen, want the stream to end", f.Event, f.Data)
				}
			case <-s.done:
				ended = true
			case <-deadline:
				t.Fatal("the stream is still open after its events were trimmed unseen")
			}
		}
		r := open(t, h.API, base+"/events", seen.ID)
		r.first(t)
		if f := r.next(t, 10*time.Second); f.Event != "reconnected" || !strings.Contains(f.Data, `"gap":true`) {
			t.Fatalf("resumed: %+v, want reconnected with a gap", f)
		}
	})
}
