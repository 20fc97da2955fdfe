package events_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/events"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A retried custom event with the same Idempotency-Key is written once: the
// repeat answers 200 with the first event's id and adds nothing to the
// stream; another key (or none) publishes again; a malformed key is 400.
func TestCustomEventIdempotencyKey(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, always)
		if r := h.Do(t, "POST", base+"/entries", `{"question":"q","answer":"a"}`); r.Status != 201 {
			t.Fatalf("append: %d %s", r.Status, r.Body)
		}
		post := func(key string, status int) string {
			t.Helper()
			var hdr []string
			if key != "" {
				hdr = []string{"Idempotency-Key", key}
			}
			r := h.Do(t, "POST", base+"/events", `{"event":"x-delta","data":{"text":"Hel"}}`, hdr...)
			if r.Status != status {
				t.Fatalf("publish with key %q: %d %s, want %d", key, r.Status, r.Body, status)
			}
			var a struct {
				ID string `json:"id"`
			}
			if status < 300 {
				r.JSON(t, &a)
			}
			return a.ID
		}
		first := post("chunk-1", 201)
		if again := post("chunk-1", 200); again != first {
			t.Errorf("repeat answered id %s, want the first publish's %s", again, first)
		}
		second := post("chunk-2", 201)
		post("", 201)
		post("", 201)
		post(strings.Repeat("k", 256), 400)
		post("bad key", 400)
		c := srv.Client(t)
		var deltas []string
		for _, e := range redisstoretest.StreamEvents(t, c, srv.Layout().SessionEvents("u1", "s1")) {
			if e.Type == "x-delta" {
				deltas = append(deltas, e.ID)
			}
		}
		if len(deltas) != 4 || deltas[0] != first || deltas[1] != second {
			t.Errorf("x-delta events %v, want 4 (chunk-1 once, chunk-2, two without a key)", deltas)
		}
		keys := srv.Layout().SessionKey(events.EventKeysFamily, "u1", "s1")
		if ttl, _ := c.Do(t.Context(), c.B().Ttl().Key(keys).Build()).AsInt64(); ttl <= 0 {
			t.Errorf("the key ring's TTL %d, want the session's", ttl)
		}
	})
}
