package events

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// streamTarget is what one GET .../events reads.
type streamTarget struct {
	key     string
	marker  mark // its watch marker (SESSION_EVENTS=watched)
	session bool // a session's stream: it ends at its deleted event
}

// after is where a reconnecting client resumes: Last-Event-ID, else
// ?after=; ok false for a fresh connection (live events only).
func after(r *http.Request) (ID, bool, error) {
	v := r.Header.Get("Last-Event-ID")
	name := "header Last-Event-ID"
	if v == "" {
		v = r.URL.Query().Get("after")
		name = "query parameter after"
	}
	if v == "" {
		return ID{}, false, nil
	}
	id, ok := ParseID(v)
	if !ok {
		return ID{}, false, sidecar.BadCursor("%s must be an event id (<ms>-<seq>, or 0 for every event kept), not %q", name, v)
	}
	return id, true, nil
}

// sse writes one stream's frames, each with its own write deadline.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	m  *metrics
}

func (s *sse) write(frame []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := s.w.Write(frame); err != nil {
		return err
	}
	return s.rc.Flush()
}

// event frames ev: id, event, data. Stored JSON may hold line breaks
// between its tokens (a message's fields are kept as sent), and an SSE line
// ends at CR, LF or CRLF: each line of the data gets its own data: field,
// which the client joins with LF back into the same JSON value.
func (s *sse) event(ev Event) error {
	b := make([]byte, 0, len(ev.Data)+len(ev.Type)+40)
	b = append(b, "id: "...)
	b = append(b, ev.ID.String()...)
	b = append(b, "\nevent: "...)
	b = append(b, ev.Type...)
	b = append(b, "\ndata: "...)
	for i := 0; i < len(ev.Data); i++ {
		switch c := ev.Data[i]; c {
		case '\r', '\n':
			if c == '\r' && i+1 < len(ev.Data) && ev.Data[i+1] == '\n' {
				i++
			}
			b = append(b, "\ndata: "...)
		default:
			b = append(b, c)
		}
	}
	b = append(b, "\n\n"...)
	if err := s.write(b); err != nil {
		return err
	}
	s.m.sent.Inc()
	return nil
}

// reconnected is the first event of a resumed stream.
type reconnected struct {
	Gap      bool    `json:"gap"`
	OldestID *string `json:"oldest_id"`
}

// serve streams target to the client until it hangs up, the session is
// deleted, it falls MaxLag events behind, or the sidecar shuts down.
func (m *Module) serve(w http.ResponseWriter, r *http.Request, t streamTarget) error {
	from, resume, err := after(r)
	if err != nil {
		return err
	}
	release, err := m.takeSlot()
	if err != nil {
		return err
	}
	defer release()
	ctx := r.Context()
	// Redis calls before the stream starts are bounded like a request's.
	rctx, cancel := context.WithTimeout(ctx, m.requestTimeout)
	defer cancel()
	client, err := m.store.Conn().Client()
	if err != nil {
		return err
	}
	s, start, since, err := m.hub.join(rctx, t.key, t.marker)
	if err != nil {
		return err
	}
	defer m.hub.leave(s)
	var rec reconnected
	if resume {
		if rec, err = resumeAt(rctx, client, t.key, from, since); err != nil {
			return err
		}
	}
	m.m.subscribers.Inc()
	defer m.m.subscribers.Dec()

	out := openStream(w, m.m)
	if out == nil {
		return nil
	}
	sent := start // the newest id written (or skipped as already seen)
	if resume {
		var done bool
		if sent, done = out.replay(rctx, client, t, rec, from, start); done {
			return nil
		}
	}
	cancel()
	out.live(ctx, s, t, sent, m.cfg.Heartbeat)
	return nil
}

// takeSlot takes one of the SIDECAR_SSE_MAX_STREAMS stream slots, or
// answers 503 too_many_streams; release gives it back.
func (m *Module) takeSlot() (release func(), err error) {
	select {
	case m.slots <- struct{}{}:
		return func() { <-m.slots }, nil
	default:
		return nil, sidecar.Errorf(http.StatusServiceUnavailable, "too_many_streams",
			"the sidecar is serving %d event streams already (SIDECAR_SSE_MAX_STREAMS); retry shortly", cap(m.slots))
	}
}

// resumeAt is the reconnected event of a client resuming after from: a
// gap when events after from were trimmed, or when the stream was not
// watched (nothing recorded) before since (ms); the oldest id kept.
func resumeAt(ctx context.Context, client rueidis.Client, key string, from ID, since uint64) (reconnected, error) {
	gap, oldest, err := gapAfter(ctx, client, key, from)
	if err != nil {
		return reconnected{}, err
	}
	rec := reconnected{Gap: gap || from.MS < since}
	if oldest != (ID{}) {
		o := oldest.String()
		rec.OldestID = &o
	}
	return rec, nil
}

// openStream answers 200 as an event stream and writes its retry field;
// nil when the client is gone already.
func openStream(w http.ResponseWriter, m *metrics) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &sse{w: w, rc: http.NewResponseController(w), m: m}
	if out.write([]byte("retry: "+strconv.Itoa(RetryMillis)+"\n\n")) != nil {
		return nil
	}
	return out
}

// replay writes the reconnected event, then what the client missed after
// from, up to start, where live events begin: the newest id written (at
// least start), and done when the stream ends here (the client gone, a
// read failed: it reconnects with its id; the session deleted).
func (s *sse) replay(ctx context.Context, client rueidis.Client, t streamTarget, rec reconnected, from, start ID) (sent ID, done bool) {
	data, _ := json.Marshal(rec)
	if s.write([]byte("event: reconnected\ndata: "+string(data)+"\n\n")) != nil {
		return from, true
	}
	sent = from
	for more := true; more && sent.Less(start); {
		evs, err := readAfter(ctx, client, t.key, sent, readPage)
		if err != nil {
			return sent, true
		}
		more = len(evs) == readPage
		for _, ev := range evs {
			if start.Less(ev.ID) {
				more = false
				break
			}
			if s.send(ev, t) {
				return ev.ID, true
			}
			sent = ev.ID
		}
	}
	if sent.Less(start) {
		sent = start
	}
	return sent, false
}

// live writes the subscription's events newer than sent, and a keepalive
// every heartbeat, until the client hangs up, the subscriber lags (it
// reconnects with its id), the session is deleted or the host shuts down.
func (s *sse) live(ctx context.Context, sub *sub, t streamTarget, sent ID, heartbeat time.Duration) {
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.lagged:
			return
		case <-beat.C:
			if s.write([]byte(": keepalive\n\n")) != nil {
				return
			}
		case <-sub.ready:
			for _, ev := range sub.take() {
				if !sent.Less(ev.ID) {
					continue
				}
				if s.send(ev, t) {
					return
				}
				sent = ev.ID
			}
		}
	}
}

// send writes ev; stop when the stream ends with it: the client is gone,
// or ev is the deleted event of a session's stream.
func (s *sse) send(ev Event, t streamTarget) (stop bool) {
	return s.event(ev) != nil || t.session && ev.Type == "deleted"
}
