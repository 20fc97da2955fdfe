package events_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

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
		<-s.frames // retry
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
		<-a.frames // retry
		// an event the reader is not woken for (as after a lost Pub/Sub
		// message): only a heartbeat's re-read would find it
		c := srv.Client(t)
		key := srv.Layout().SessionEvents("u1", "s1")
		if err := c.Do(t.Context(), c.B().Xadd().Key(key).Id("*").FieldValue().FieldValue("t", "x-missed").FieldValue("d", "0").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		b := open(t, h.API, base+"/events", "")
		<-b.frames // retry
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
