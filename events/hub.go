package events

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// hub is the one reader of a sidecar: every stream its subscribers watch is
// read by it, after the last id it delivered, with one pipelined XRANGE per
// woken stream (rueidis sends each to its key's node on a Cluster), over
// the connection's shared pipelines. It wakes on a message of the stream's
// own Pub/Sub channel, redisstore.EventsChannel(stream), subscribed on the
// sidecar's one Pub/Sub connection while the stream is watched here
// (subscribe.go), and, whatever Pub/Sub said, re-reads every watched stream
// each heartbeat: no wake-up is load-bearing. The number of Redis
// connections does not grow with subscribers, and a write reaches only the
// sidecars watching its stream.
type hub struct {
	redis     *redisstore.Conn
	logger    *slog.Logger
	m         *metrics
	heartbeat time.Duration

	mu      sync.Mutex
	streams map[string]*watch
	dirty   map[string]bool
	wake    chan struct{} // one pending wake-up
	// changed holds the streams whose watch was made or dropped since the
	// subscription loop last looked; resub is its one pending wake-up.
	changed map[string]bool
	resub   chan struct{}
}

// watch is one stream and its subscribers on this sidecar.
type watch struct {
	key  string
	last ID // the newest event delivered (only the reader moves it)
	subs map[*sub]struct{}
}

// sub is one subscriber: its buffer of live events (at most MaxLag, grown
// as needed: an idle subscriber holds none), ready signalled when events
// wait, and lagged, closed when it fell MaxLag events behind and was
// dropped.
type sub struct {
	w      *watch
	mu     sync.Mutex
	buf    []Event
	ready  chan struct{} // one pending signal
	lagged chan struct{}
}

// push queues ev; false when MaxLag events wait already.
func (s *sub) push(ev Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) >= MaxLag {
		return false
	}
	s.buf = append(s.buf, ev)
	select {
	case s.ready <- struct{}{}:
	default:
	}
	return true
}

// take returns the events waiting, oldest first.
func (s *sub) take() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.buf
	s.buf = nil
	return evs
}

func newHub(redis *redisstore.Conn, logger *slog.Logger, m *metrics, heartbeat time.Duration) *hub {
	return &hub{redis: redis, logger: logger, m: m, heartbeat: heartbeat,
		streams: map[string]*watch{}, dirty: map[string]bool{}, wake: make(chan struct{}, 1),
		changed: map[string]bool{}, resub: make(chan struct{}, 1)}
}

// join subscribes to stream key. Live events are those after the returned
// id, the stream's newest event at join time: the caller replays up to it
// itself, and skips what the reader still delivers up to it (the reader
// may be behind the stream, say after a lost wake-up, and a fresh stream
// starts with the next write). A new watch is read at once, so an event
// added while it was being made waits for no heartbeat.
func (h *hub) join(ctx context.Context, key string) (*sub, ID, error) {
	// The stream's newest id, read before the watch exists: anything added
	// after the read is after `last`, so the reader gets it.
	c, err := h.redis.Client()
	if err != nil {
		return nil, ID{}, err
	}
	last, err := lastID(ctx, c, key)
	if err != nil {
		return nil, ID{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.streams[key]
	if w == nil {
		w = &watch{key: key, last: last, subs: map[*sub]struct{}{}}
		h.streams[key] = w
		h.dirty[key] = true
		h.signal()
		h.watchChanged(key)
	}
	s := &sub{w: w, ready: make(chan struct{}, 1), lagged: make(chan struct{})}
	w.subs[s] = struct{}{}
	if last.Less(w.last) {
		last = w.last
	}
	return s, last, nil
}

// leave unsubscribes s; the stream is no longer read once nobody watches.
func (h *hub) leave(s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(s.w.subs, s)
	if len(s.w.subs) == 0 && h.streams[s.w.key] == s.w {
		h.unwatch(s.w.key)
	}
}

// unwatch drops the watch of key (h.mu held).
func (h *hub) unwatch(key string) {
	delete(h.streams, key)
	delete(h.dirty, key)
	h.watchChanged(key)
}

// watchChanged tells the subscription loop that key's watch was made or
// dropped (h.mu held).
func (h *hub) watchChanged(key string) {
	h.changed[key] = true
	select {
	case h.resub <- struct{}{}:
	default:
	}
}

// poke marks stream key to be read and wakes the reader, when the key is
// watched: every write of every pod pokes, most of them streams nobody here
// watches, and those cost no wake-up.
func (h *hub) poke(key string) {
	h.mu.Lock()
	_, ok := h.streams[key]
	if ok {
		h.dirty[key] = true
	}
	h.mu.Unlock()
	if ok {
		h.signal()
	}
}

// pokeAll marks every watched stream to be read.
func (h *hub) pokeAll() {
	h.mu.Lock()
	for k := range h.streams {
		h.dirty[k] = true
	}
	h.mu.Unlock()
	h.signal()
}

func (h *hub) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// watched is the number of streams watched, for tests.
func (h *hub) watched() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams)
}

// run is the reader: it reads the dirty streams whenever woken, and every
// stream at each heartbeat, until ctx ends.
func (h *hub) run(ctx context.Context) {
	tick := time.NewTicker(h.heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-tick.C:
			h.mu.Lock()
			for k := range h.streams {
				h.dirty[k] = true
			}
			h.mu.Unlock()
		}
		h.readDirty(ctx)
	}
}

// pipeline bounds the reads sent in one round trip.
const pipeline = 128

// readDirty reads every dirty stream after its last id and delivers.
func (h *hub) readDirty(ctx context.Context) {
	h.mu.Lock()
	keys := make([]string, 0, len(h.dirty))
	afters := make([]ID, 0, len(h.dirty))
	for k := range h.dirty {
		if w := h.streams[k]; w != nil {
			keys = append(keys, k)
			afters = append(afters, w.last)
		}
	}
	clear(h.dirty)
	h.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	c, err := h.redis.Client()
	if err != nil {
		h.again(keys)
		return
	}
	for from := 0; from < len(keys); from += pipeline {
		to := min(from+pipeline, len(keys))
		cmds := make(rueidis.Commands, 0, to-from)
		for i := from; i < to; i++ {
			// From the last delivered event itself: while it is still
			// kept, nothing after it was trimmed (trimming removes the
			// oldest first).
			start, n := "("+afters[i].String(), int64(readPage)
			if afters[i] != (ID{}) {
				start, n = afters[i].String(), readPage+1
			}
			cmds = append(cmds, c.B().Xrange().Key(keys[i]).Start(start).End("+").Count(n).Build())
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res := c.DoMulti(rctx, cmds...)
		cancel()
		h.m.reads.Add(float64(len(cmds)))
		for j, r := range res {
			entries, err := r.AsXRange()
			if err != nil && !rueidis.IsRedisNil(err) {
				// An outage: the next heartbeat (or wake-up) reads again.
				h.logger.Debug("event stream read", "err", err)
				continue
			}
			evs := parseEntries(entries)
			key, after := keys[from+j], afters[from+j]
			full := len(evs) == readPage
			if after != (ID{}) {
				full = len(evs) == readPage+1
				switch {
				case len(evs) > 0 && evs[0].ID == after:
					evs = evs[1:]
				case len(evs) > 0 && evs[0].Type != "deleted":
					// Trimmed past what was delivered: events may be lost
					// between; the subscribers resume with their ids and
					// learn of the gap (a deleted session's stream keeps
					// only its deleted event, delivered as it is).
					h.cut(key, after)
					continue
				}
			}
			if full {
				h.again(keys[from+j : from+j+1])
			}
			h.deliver(key, evs)
		}
	}
}

// again marks keys dirty and wakes the reader.
func (h *hub) again(keys []string) {
	h.mu.Lock()
	for _, k := range keys {
		if _, ok := h.streams[k]; ok {
			h.dirty[k] = true
		}
	}
	h.mu.Unlock()
	h.signal()
}

// deliver hands evs (read after the watch's last id) to every subscriber
// of key; one whose buffer is full is dropped.
func (h *hub) deliver(key string, evs []Event) {
	if len(evs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.streams[key]
	if w == nil {
		return
	}
	for _, ev := range evs {
		if !w.last.Less(ev.ID) {
			continue // a read that raced another: already delivered
		}
		w.last = ev.ID
		for s := range w.subs {
			if !s.push(ev) {
				delete(w.subs, s)
				close(s.lagged)
				h.m.dropped.Inc()
			}
		}
	}
	if len(w.subs) == 0 {
		h.unwatch(key)
	}
}

// cut drops every subscriber of key (they reconnect with their ids) when
// the stream was trimmed past after, the last event delivered.
func (h *hub) cut(key string, after ID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.streams[key]
	if w == nil || w.last != after {
		return
	}
	for s := range w.subs {
		close(s.lagged)
		h.m.dropped.Inc()
	}
	h.unwatch(key)
}
