package events

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

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
	select {
	case m.slots <- struct{}{}:
		defer func() { <-m.slots }()
	default:
		return sidecar.Errorf(http.StatusServiceUnavailable, "too_many_streams",
			"the sidecar is serving %d event streams already (SIDECAR_SSE_MAX_STREAMS); retry shortly", cap(m.slots))
	}
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
	var gap bool
	var oldest ID
	if resume {
		if gap, oldest, err = gapAfter(rctx, client, t.key, from); err != nil {
			return err
		}
		// Unwatched before since, the writes recorded nothing: events after
		// the client's id may be missing.
		if from.MS < since {
			gap = true
		}
	}
	m.m.subscribers.Inc()
	defer m.m.subscribers.Dec()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &sse{w: w, rc: http.NewResponseController(w), m: m.m}
	if out.write([]byte("retry: "+strconv.Itoa(RetryMillis)+"\n\n")) != nil {
		return nil
	}
	sent := start // the newest id written (or skipped as already seen)
	if resume {
		rec := reconnected{Gap: gap}
		if oldest != (ID{}) {
			o := oldest.String()
			rec.OldestID = &o
		}
		data, _ := json.Marshal(rec)
		if out.write([]byte("event: reconnected\ndata: "+string(data)+"\n\n")) != nil {
			return nil
		}
		// Replay what the client missed, up to where live events begin.
		sent = from
		for more := true; more && sent.Less(start); {
			evs, err := readAfter(rctx, client, t.key, sent, readPage)
			if err != nil {
				return nil // the client reconnects with its id
			}
			more = len(evs) == readPage
			for _, ev := range evs {
				if start.Less(ev.ID) {
					more = false
					break
				}
				if out.event(ev) != nil {
					return nil
				}
				sent = ev.ID
				if t.session && ev.Type == "deleted" {
					return nil
				}
			}
		}
		if sent.Less(start) {
			sent = start
		}
	}
	cancel()
	beat := time.NewTicker(m.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.lagged:
			return nil // its buffer overflowed: it reconnects with its id
		case <-beat.C:
			if out.write([]byte(": keepalive\n\n")) != nil {
				return nil
			}
		case <-s.ready:
			for _, ev := range s.take() {
				if !sent.Less(ev.ID) {
					continue
				}
				if err := out.event(ev); err != nil {
					return nil
				}
				sent = ev.ID
				if t.session && ev.Type == "deleted" {
					return nil
				}
			}
		}
	}
}
