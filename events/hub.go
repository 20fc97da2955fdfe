package events

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
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
//
// With SESSION_EVENTS=watched (grace > 0) the hub also keeps every watched
// stream's mark (the user's marker's field w:<s>, WatchField; the user's
// stream's UserWatchFamily) alive: set when a subscriber joins, then
// refreshed every refresh interval for as long as the stream is watched
// here, so the writes on every pod record its events. A refresh that finds
// the marker had lapsed (a longer outage) drops the stream's subscribers:
// they reconnect with their ids and learn of the gap. Each read of a
// stream reads its marker first, so a lapse another pod's reader ended
// (the marker begun anew) drops them before they get an event recorded
// after the gap.
type hub struct {
	redis     *redisstore.Conn
	logger    *slog.Logger
	m         *metrics
	heartbeat time.Duration
	grace     time.Duration // 0: SESSION_EVENTS=always, no markers
	refresh   time.Duration

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
	key    string
	marker mark   // where the stream's watch is marked (marker "" with SESSION_EVENTS=always)
	since  uint64 // the marker's since (ms): events after it are recorded
	last   ID     // the newest event delivered (only the reader moves it)
	subs   map[*sub]struct{}
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

// newHub makes the hub; grace is the markers' grace period (0: none kept)
// and refresh how often they are refreshed.
func newHub(redis *redisstore.Conn, logger *slog.Logger, m *metrics, heartbeat, grace, refresh time.Duration) *hub {
	return &hub{redis: redis, logger: logger, m: m, heartbeat: heartbeat, grace: grace, refresh: refresh,
		streams: map[string]*watch{}, dirty: map[string]bool{}, wake: make(chan struct{}, 1),
		changed: map[string]bool{}, resub: make(chan struct{}, 1)}
}

// join subscribes to stream key. Live events are those after the returned
// id, the stream's newest event at join time: the caller replays up to it
// itself, and skips what the reader still delivers up to it (the reader
// may be behind the stream, say after a lost wake-up, and a fresh stream
// starts with the next write). A new watch is read at once, so an event
// added while it was being made waits for no heartbeat.
//
// With markers (grace > 0) join first marks the stream watched (marker,
// its key), so every write after it records its event, and returns since
// when the stream has been watched without a break (ms; 0 without
// markers): a reader resuming from an older id may have missed events.
func (h *hub) join(ctx context.Context, key string, marker mark) (*sub, ID, uint64, error) {
	c, err := h.redis.Client()
	if err != nil {
		return nil, ID{}, 0, err
	}
	var since uint64
	if h.grace <= 0 {
		marker = mark{}
	}
	if marker.marker != "" {
		s, errs := watchMarkers(ctx, c, h.grace, []mark{marker})
		switch {
		case errors.Is(errs[0], redisstore.ErrNotFound):
			// a session gone (a reader resuming from its tombstone, or
			// deleted since the caller looked): nothing marked, since 0;
			// the watch's first read finds no mark and drops it unless
			// the deleted event ends it
		case errs[0] != nil:
			return nil, ID{}, 0, errs[0]
		default:
			since = s[0]
		}
	}
	// The stream's newest id, read before the watch exists: anything added
	// after the read is after `last`, so the reader gets it.
	last, err := lastID(ctx, c, key)
	if err != nil {
		return nil, ID{}, 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.streams[key]
	if w != nil && w.since < since {
		// the marker lapsed and began anew since this watch was made: its
		// subscribers may have missed events
		h.drop(w)
		w = nil
	}
	if w == nil {
		w = &watch{key: key, marker: marker, since: since, last: last, subs: map[*sub]struct{}{}}
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
	return s, last, since, nil
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
// stream at each heartbeat, and refreshes the markers, until ctx ends.
func (h *hub) run(ctx context.Context) {
	tick := time.NewTicker(h.heartbeat)
	defer tick.Stop()
	var refresh <-chan time.Time
	if h.grace > 0 {
		t := time.NewTicker(h.refresh)
		defer t.Stop()
		refresh = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh:
			h.refreshMarkers(ctx)
			continue
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

// readDirty reads every dirty stream after its last id and delivers,
// pipeline streams a round trip.
func (h *hub) readDirty(ctx context.Context) {
	reads := h.takeDirty()
	if len(reads) == 0 {
		return
	}
	c, err := h.redis.Client()
	if err != nil {
		keys := make([]string, len(reads))
		for i, r := range reads {
			keys[i] = r.key
		}
		h.again(keys...)
		return
	}
	for from := 0; from < len(reads); from += pipeline {
		h.readBatch(ctx, c, reads[from:min(from+pipeline, len(reads))])
	}
}

// streamRead is one dirty stream to read: its watch, and the last id
// delivered when it was taken.
type streamRead struct {
	w     *watch
	key   string
	after ID
}

// takeDirty takes the dirty streams still watched, and clears the set.
func (h *hub) takeDirty() []streamRead {
	h.mu.Lock()
	defer h.mu.Unlock()
	reads := make([]streamRead, 0, len(h.dirty))
	for k := range h.dirty {
		if w := h.streams[k]; w != nil {
			reads = append(reads, streamRead{w: w, key: k, after: w.last})
		}
	}
	clear(h.dirty)
	return reads
}

// readBatch reads reads in one round trip: each stream's marker first,
// then the stream after its last delivered event, and delivers.
func (h *hub) readBatch(ctx context.Context, c rueidis.Client, reads []streamRead) {
	cmds := make(rueidis.Commands, 0, 2*len(reads))
	// each stream's marker, read before the stream: a watch whose marker
	// lapsed and began anew (another pod's reader) must not be handed the
	// events recorded since, or its subscribers would reconnect after the
	// unrecorded ones and never learn of the gap
	at := make([]int, len(reads))
	for i, r := range reads {
		at[i] = -1
		if r.w.marker.marker != "" {
			at[i] = len(cmds)
			cmds = append(cmds, r.w.marker.read(c))
		}
	}
	first := len(cmds)
	for _, r := range reads {
		// From the last delivered event itself: while it is still kept,
		// nothing after it was trimmed (trimming removes the oldest first).
		start, n := "("+r.after.String(), int64(readPage)
		if r.after != (ID{}) {
			start, n = r.after.String(), readPage+1
		}
		cmds = append(cmds, c.B().Xrange().Key(r.key).Start(start).End("+").Count(n).Build())
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	res := c.DoMulti(rctx, cmds...)
	cancel()
	h.m.reads.Add(float64(len(cmds) - first))
	for j, r := range res[first:] {
		if a := at[j]; a >= 0 && h.lapsed(reads[j].w, res[a], r) {
			continue
		}
		h.deliverRead(reads[j], r)
	}
}

// deliverRead hands the events of one stream's read (XRANGE from its last
// delivered event) to its subscribers; a stream trimmed past what was
// delivered cuts them (they learn of the gap), a full page reads again.
func (h *hub) deliverRead(rd streamRead, r rueidis.RedisResult) {
	entries, err := r.AsXRange()
	if err != nil && !rueidis.IsRedisNil(err) {
		// An outage: the next heartbeat (or wake-up) reads again.
		h.logger.Debug("event stream read", "err", err)
		return
	}
	evs := parseEntries(entries)
	full := len(evs) == readPage
	if rd.after != (ID{}) {
		full = len(evs) == readPage+1
		switch {
		case len(evs) > 0 && evs[0].ID == rd.after:
			evs = evs[1:]
		case len(evs) > 0 && evs[0].Type != "deleted":
			// Trimmed past what was delivered: events may be lost between;
			// the subscribers resume with their ids and learn of the gap
			// (a deleted session's stream keeps only its deleted event,
			// delivered as it is).
			h.cut(rd.key, rd.after)
			return
		}
	}
	if full {
		h.again(rd.key)
	}
	h.deliver(rd.key, evs)
}

// lapsed drops w and reports true when its marker, as read (get), no
// longer holds the since w was made with (gone, or begun anew): the
// subscribers reconnect with ids older than the new since and get the gap.
// A mark gone with its session is no lapse when the stream's read after it
// (read) holds the session's deleted event carrying that since: the watch
// ran unbroken up to the delete, which removed the mark. An outage reports
// false (the stream's read fails too).
func (h *hub) lapsed(w *watch, get, read rueidis.RedisResult) bool {
	v, err := get.ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		return false
	}
	if err != nil {
		v = ""
		entries, _ := read.AsXRange()
		for _, ev := range parseEntries(entries) {
			if ev.Type == "deleted" && ev.watch != "" {
				v = ev.watch
			}
		}
	}
	if _, since, ok := strings.Cut(v, ":"); ok && since == strconv.FormatUint(w.since, 10) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.streams[w.key] == w {
		h.drop(w)
	}
	return true
}

// again marks keys dirty and wakes the reader.
func (h *hub) again(keys ...string) {
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

// refreshMarkers keeps the marker of every stream watched here alive (one
// pipelined script per marker, pipeline at a time). A marker found lapsed
// (its since moved: the writes skipped events meanwhile) drops the
// stream's subscribers, who reconnect with their ids and get the gap; so
// does one refused (its user being erased: no marker is made again).
func (h *hub) refreshMarkers(ctx context.Context) {
	h.mu.Lock()
	ws := make([]*watch, 0, len(h.streams))
	for _, w := range h.streams {
		if w.marker.marker != "" {
			ws = append(ws, w)
		}
	}
	h.mu.Unlock()
	if len(ws) == 0 {
		return
	}
	c, err := h.redis.Client()
	if err != nil {
		return
	}
	for from := 0; from < len(ws); from += pipeline {
		part := ws[from:min(from+pipeline, len(ws))]
		markers := make([]mark, len(part))
		for i, w := range part {
			markers[i] = w.marker
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		since, errs := watchMarkers(rctx, c, h.grace, markers)
		cancel()
		h.mu.Lock()
		for i, w := range part {
			var refusal *redisstore.Refusal
			if errors.As(errs[i], &refusal) && h.streams[w.key] == w {
				h.drop(w)
				continue
			}
			if errors.Is(errs[i], redisstore.ErrNotFound) {
				// the session is gone: the next read delivers its
				// deleted event, or drops the watch (no mark left)
				if h.streams[w.key] == w {
					h.dirty[w.key] = true
					h.signal()
				}
				continue
			}
			if errs[i] != nil {
				h.logger.Debug("event stream marker refresh", "err", errs[i])
				continue
			}
			if w.since < since[i] && h.streams[w.key] == w {
				h.drop(w)
			}
		}
		h.mu.Unlock()
	}
}

// drop ends every subscriber of w and the watch itself (h.mu held): they
// reconnect with their ids.
func (h *hub) drop(w *watch) {
	for s := range w.subs {
		close(s.lagged)
		h.m.dropped.Inc()
	}
	clear(w.subs)
	if h.streams[w.key] == w {
		h.unwatch(w.key)
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
	h.drop(w)
}
