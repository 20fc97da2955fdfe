package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// GetSessionEvents streams the session's events (getSessionEvents),
// reconnecting by itself with Last-Event-ID whenever the stream ends or
// fails (after the sidecar's retry delay, or opts.Retry), so every event
// still kept arrives once, in order, across reconnects and sidecars; a
// "reconnected" event (Data: Reconnected) starts each resumed stream. The
// iteration ends after the "deleted" event, when ctx ends, or when the
// loop breaks. An error is yielded (with a zero Event) and iteration goes
// on unless the loop breaks; a 4xx answer (an unknown session: IsNotFound)
// ends it after its error.
//
//	for ev, err := range c.GetSessionEvents(ctx, "alice", "chat-1", client.EventsOptions{}) {
//		if err != nil { log.Print(err); continue }
//		fmt.Println(ev.ID, ev.Type, string(ev.Data))
//	}
func (c *Client) GetSessionEvents(ctx context.Context, user, session string, opts EventsOptions) iter.Seq2[Event, error] {
	p, err := sessionPath(user, session, "events")
	return c.events(ctx, p, err, true, opts)
}

// GetUserEvents streams the user's events (getUserEvents) as
// GetSessionEvents does; the stream never ends by itself.
func (c *Client) GetUserEvents(ctx context.Context, user string, opts EventsOptions) iter.Seq2[Event, error] {
	p, err := apiPath("users", user, "events")
	return c.events(ctx, p, err, false, opts)
}

// PublishSessionEvent appends a custom event (x-<name>, data of at most 8
// KiB of JSON) to the session's stream and returns its id
// (publishSessionEvent).
func (c *Client) PublishSessionEvent(ctx context.Context, user, session string, ev CustomEvent) (*EventID, error) {
	p, err := sessionPath(user, session, "events")
	return answer[EventID](ctx, c, http.MethodPost, p, ev, err)
}

// RequestAbort records a request that the session's agent stop; a repeat
// answers the first time (requestAbort). Until it is cleared every write
// answer of the session carries Sidecar-Abort-Requested.
func (c *Client) RequestAbort(ctx context.Context, user, session string) (*AbortRequest, error) {
	p, err := sessionPath(user, session, "abort")
	return answer[AbortRequest](ctx, c, http.MethodPost, p, nil, err)
}

// ClearAbort withdraws the session's abort request (clearAbort).
func (c *Client) ClearAbort(ctx context.Context, user, session string) error {
	p, err := sessionPath(user, session, "abort")
	return c.delete(ctx, p, err)
}

// errStreamEnded: the sidecar closed the stream (shutdown, a lagging
// client); the iterator reconnects.
var errStreamEnded = errors.New("client: event stream ended")

func (c *Client) events(ctx context.Context, path string, pathErr error, session bool, opts EventsOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if pathErr != nil {
			yield(Event{}, pathErr)
			return
		}
		last := opts.After
		retry := 3 * time.Second
		for ctx.Err() == nil {
			st := &sseState{last: last, retry: retry}
			err := c.stream(ctx, path, st, session, yield)
			last, retry = st.last, st.retry
			if opts.Retry > 0 {
				retry = opts.Retry
			}
			if st.stop || ctx.Err() != nil {
				return
			}
			if err == nil {
				err = errStreamEnded
			}
			if !yield(Event{}, err) {
				return
			}
			var e *Error
			if errors.As(err, &e) && e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
		}
	}
}

// sseState is what one connection leaves for the next.
type sseState struct {
	last  string        // the id of the last event yielded
	retry time.Duration // the sidecar's retry
	stop  bool          // deleted, or the loop broke
}

// stream opens one connection and yields its events until it ends.
func (c *Client) stream(ctx context.Context, path string, st *sseState, session bool, yield func(Event, error) bool) error {
	u := c.base + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if st.last != "" {
		req.Header.Set("Last-Event-ID", st.last)
	}
	c.identify(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return errorFrom(resp.StatusCode, resp.Header, data)
	}
	rd := bufio.NewReaderSize(resp.Body, 16<<10)
	var ev Event
	var data []string
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("client: read %s: %w", path, err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if ev.Type != "" || len(data) > 0 {
				ev.Data = []byte(strings.Join(data, "\n"))
				if ev.ID != "" {
					st.last = ev.ID
				}
				if !yield(ev, nil) || (session && ev.Type == "deleted") {
					st.stop = true
					return nil
				}
			}
			ev, data = Event{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Type = value
		case "data":
			data = append(data, value)
		case "retry":
			if ms, err := strconv.Atoi(value); err == nil && ms > 0 {
				st.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}
