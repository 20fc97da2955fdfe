package sessions

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Limits of the background catch-up after appends (docs/operations.md).
const (
	// IndexerQueue bounds the sessions waiting for a catch-up; a touch
	// that finds the queue full is dropped (the session's next touch
	// queues it again).
	IndexerQueue = 1024
	// IndexerTimeout bounds one session's catch-up.
	IndexerTimeout = 10 * time.Second
	// RecheckEvery: a write that is not an append queues a session for a
	// look at its index (whether the postings are due a refresh) at most
	// this often per pod (a quarter of SESSION_TTL_SECONDS when shorter).
	RecheckEvery = time.Minute
	// recheckMemory bounds the sessions whose last look the pod remembers.
	recheckMemory = 4096
)

type sessionRef struct{ user, session string }

// indexer puts the entries another program appended into the search index
// in the background, after an append found some: one goroutine per pod,
// each session queued at most once at a time, so concurrent appends to a
// session another program grew coalesce into one catch-up instead of
// racing over the same entries, and no answer waits on it.
type indexer struct {
	store   *Store
	logger  *slog.Logger
	recheck time.Duration // touchLater's interval per session

	mu      sync.Mutex
	pending map[sessionRef]bool
	looked  map[sessionRef]time.Time // last touchLater that queued it
	queue   chan sessionRef
	stop    chan struct{}
	done    chan struct{}
}

func newIndexer(store *Store, logger *slog.Logger, ttlSeconds int) *indexer {
	recheck := RecheckEvery
	if ttlSeconds > 0 {
		recheck = min(recheck, time.Duration(ttlSeconds)*time.Second/4)
	}
	x := &indexer{store: store, logger: logger, recheck: recheck, pending: map[sessionRef]bool{}, looked: map[sessionRef]time.Time{},
		queue: make(chan sessionRef, IndexerQueue), stop: make(chan struct{}), done: make(chan struct{})}
	go x.run()
	return x
}

// touch queues the session for a catch-up unless it is queued already or
// the queue is full. It never blocks.
func (x *indexer) touch(user, session string) {
	ref := sessionRef{user, session}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pending[ref] {
		return
	}
	select {
	case x.queue <- ref:
		x.pending[ref] = true
	default:
		indexerDropped.Inc()
	}
}

// touchLater is touch for a write that does not know whether the index
// lacks something (feedback, an update, a delete): at most once per
// recheck per session, so that an index due a refresh is refreshed
// even when the session is written to without appends.
func (x *indexer) touchLater(user, session string) {
	ref, now := sessionRef{user, session}, time.Now()
	x.mu.Lock()
	last, ok := x.looked[ref]
	if ok && now.Sub(last) < x.recheck {
		x.mu.Unlock()
		return
	}
	if len(x.looked) >= recheckMemory {
		clear(x.looked)
	}
	x.looked[ref] = now
	x.mu.Unlock()
	x.touch(user, session)
}

func (x *indexer) run() {
	defer close(x.done)
	for {
		select {
		case <-x.stop:
			return
		case ref := <-x.queue:
			x.mu.Lock()
			delete(x.pending, ref) // a touch from now on queues it again
			x.mu.Unlock()
			x.catchUp(ref)
		}
	}
}

// catchUp indexes the session's pending entries, a bounded number of steps
// (CatchupStepsAppend), honouring shutdown.
func (x *indexer) catchUp(ref sessionRef) {
	ctx, cancel := context.WithTimeout(context.Background(), IndexerTimeout)
	defer cancel()
	go func() {
		select {
		case <-x.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := x.store.CatchUp(ctx, ref.user, ref.session, CatchupStepsAppend); err != nil && ctx.Err() == nil {
		x.logger.Warn("search index: entries another program appended not indexed yet", "user_id", ref.user, "session_id", ref.session, "err", err)
	}
}

// close stops the goroutine (a catch-up under way is cancelled; queued
// sessions are indexed at their next touch).
func (x *indexer) close(ctx context.Context) error {
	close(x.stop)
	select {
	case <-x.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
