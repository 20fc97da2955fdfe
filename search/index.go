package search

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Step takes one bounded step of putting what the index lacks of one kind
// of a session's documents into it (one script of at most about 5 ms of
// Redis time): whether more is left.
type Step func(ctx context.Context, user, session string) (more bool, err error)

// Limits of building and catching up (docs/operations.md).
const (
	// Queue bounds the sessions and users waiting for the background
	// worker; a touch that finds it full is dropped (the next touch
	// queues it again).
	Queue = 1024
	// JobTimeout bounds one background job (a session's catch-up, or a
	// slice of a user's build, which queues the rest again).
	JobTimeout = 10 * time.Second
	// SearchBudget bounds the index work a relevance search does before it
	// answers (the rest goes on in the background and the answer says
	// "index": "building").
	SearchBudget = 2 * time.Second
	// BuildPage is how many of the user's sessions a build lists at a time.
	BuildPage = 16
	// knownMemory bounds the users WriteMode remembers.
	knownMemory = 4096
)

// Index is the host's relevance index: SEARCH_INDEX, the steps of each
// module's documents (entries, messages), the build of a user's index
// under on-demand, and the paced background worker. One per host
// (FromDeps).
type Index struct {
	mode   Mode
	store  *sessionstore.Store
	logger *slog.Logger
	// OnDrop counts a touch dropped by a full queue (a module's metric).
	OnDrop func()

	mu      sync.Mutex
	known   map[string]time.Time // users seen with an index (WriteMode)
	busy    map[string]bool      // users whose build runs in this pod
	steps   []Step
	texts   map[string]Texts // each kind's fetcher of texts (snippets)
	pending map[job]bool
	queue   chan job
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// job is a session's catch-up, or (session "") a user's build.
type job struct{ user, session string }

// FromDeps is the host's one Index over the host's session store s (the
// first module to ask gives SEARCH_INDEX; every module parses it with
// Mode.Parse).
func FromDeps(deps sidecar.Deps, s *sessionstore.Store, mode Mode) (*Index, error) {
	return sidecar.Shared(deps, "search", func(deps sidecar.Deps) (*Index, error) {
		x := &Index{mode: mode.Of(), store: s, logger: deps.Logger, pending: map[job]bool{}, known: map[string]time.Time{}, busy: map[string]bool{},
			queue: make(chan job, Queue), stop: make(chan struct{}), done: make(chan struct{})}
		go x.run()
		return x, nil
	})
}

// Open is how a module that indexes its writes begins its New:
// sessionstore.Open (the host's session store and the module's settings
// C), then the host's Index over that store (FromDeps) at SEARCH_INDEX.
func Open[C any](deps sidecar.Deps) (*sessionstore.Store, C, *Index, error) {
	s, cfg, err := sessionstore.Open[C](deps)
	if err != nil {
		return nil, cfg, nil, err
	}
	x, err := FromDeps(deps, s, Mode(deps.Limits.SearchIndex))
	return s, cfg, x, err
}

// Mode is SEARCH_INDEX.
func (x *Index) Mode() Mode { return x.mode }

// KnownFor is how long the pod trusts that a user has an index.
const KnownFor = time.Minute

// WriteMode is the mode an entry write of user is sent with: under
// on-demand, Probe (no document: a user who never searched costs what off
// costs) unless the pod saw the user with an index within KnownFor.
func (x *Index) WriteMode(user string) Mode {
	if x.mode != OnDemand {
		return x.mode
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if t, ok := x.known[user]; ok && time.Since(t) < KnownFor {
		return OnDemand
	}
	return Probe
}

// Known notes that user has an index (a probe answered pending, or a
// search opened it).
func (x *Index) Known(user string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.known) >= knownMemory {
		clear(x.known)
	}
	x.known[user] = time.Now()
}

// Register adds a module's step (at New).
func (x *Index) Register(s Step) {
	x.mu.Lock()
	x.steps = append(x.steps, s)
	x.mu.Unlock()
}

func (x *Index) registered() []Step {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]Step(nil), x.steps...)
}

// Coverage says how complete the index is for an answer: Building while
// a build is partial, and then Since, the time back to which the user's
// sessions are covered (by last activity; zero: not known).
type Coverage struct {
	Building bool
	Since    time.Time
}

// Field is what an answer carries: "building", or "" once built.
func (c Coverage) Field() string {
	if c.Building {
		return "building"
	}
	return ""
}

// SinceField is Since as an answer carries it ("" when not known or built).
func (c Coverage) SinceField() string {
	if !c.Building || c.Since.IsZero() {
		return ""
	}
	return c.Since.UTC().Format(time.RFC3339Nano)
}

// mark runs search_mark: op "open" or "cursor". Returns the build cursor.
func (x *Index) mark(ctx context.Context, user string, args ...string) (string, error) {
	r, err := x.store.Run(ctx, luaScripts.Mark, user, "-", args...)
	if err != nil {
		return "", err
	}
	return r.String(0)
}

// indexed reports whether the user has an index (the marker's field, one
// HEXISTS).
func (x *Index) indexed(ctx context.Context, user string) (bool, error) {
	client, err := x.store.Conn().Client()
	if err != nil {
		return false, err
	}
	l := redisstore.Layout{Cluster: x.store.Conn().Cluster()}
	n, err := client.Do(ctx, client.B().Hexists().Key(l.UserMarker(user)).Field(MarkerField.Name).Build()).AsInt64()
	if err != nil {
		return false, redisstore.Wrap("search index: marker", err)
	}
	return n == 1, nil
}

// Prepare readies the index for a relevance search of user (of session
// only, when not ""): under on-demand it opens the user's marker (made, or
// its TTL slid) and builds for at most SearchBudget (the session's
// documents first when session is given), leaving the rest to the
// background; under eager it catches the session up, and a user-wide
// search builds as under on-demand (a first build meets sessions indexed
// already, and takes in those written while the index was off or by
// another program). Errors of the index work are logged, not returned: the
// search answers what is indexed.
func (x *Index) Prepare(ctx context.Context, user, session string) Coverage {
	if x.mode == Off {
		return Coverage{}
	}
	until := time.Now().Add(SearchBudget)
	if d, ok := ctx.Deadline(); ok && time.Until(d)/2 < SearchBudget {
		until = time.Now().Add(time.Until(d) / 2)
	}
	if session == "" {
		ctx = sidecar.WithoutAnswerHeaders(ctx) // other sessions' steps: not this answer's headers
	}
	cov, err := x.prepare(ctx, user, session, until)
	if err != nil && ctx.Err() == nil {
		x.logger.Warn("search index: not complete yet", "user_id", user, "session_id", session, "err", err)
	}
	return cov
}

func (x *Index) prepare(ctx context.Context, user, session string, until time.Time) (Coverage, error) {
	if x.mode != OnDemand && session != "" {
		more, err := x.catchUp(ctx, user, session, until)
		return Coverage{Building: more}, err
	}
	// under eager too, a user-wide search keeps the marker: its build takes
	// in the sessions written while the index was off or by another
	// program (and finds every other session indexed already)
	cursor, err := x.mark(ctx, user, "open")
	if err != nil {
		return Coverage{Building: true}, err
	}
	x.Known(user)
	if session != "" {
		more, err := x.catchUp(ctx, user, session, until)
		if more {
			x.Touch(user, session)
		}
		if cursor != "" {
			x.enqueue(job{user, ""})
		}
		return Coverage{Building: more}, err
	}
	if cursor == "" {
		return Coverage{}, nil
	}
	if !x.claim(user) { // another request or the worker builds it now
		return Coverage{Building: true, Since: since(cursor)}, nil
	}
	cov, err := x.build(ctx, user, cursor, until)
	x.release(user)
	if cov.Building {
		x.enqueue(job{user, ""})
	}
	return cov, err
}

// claim marks user's build as running in this pod: false when it is
// already (two builders of one user would race over the same steps).
func (x *Index) claim(user string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.busy[user] {
		return false
	}
	x.busy[user] = true
	return true
}

func (x *Index) release(user string) {
	x.mu.Lock()
	delete(x.busy, user)
	x.mu.Unlock()
}

// Session catches the session up before until (a fork's copies): under
// on-demand only while the user has an index; nothing under off. Returns
// whether more is left (queued for the background then).
func (x *Index) Session(ctx context.Context, user, session string, until time.Time) (bool, error) {
	if x.mode == Off {
		return false, nil
	}
	if x.mode == OnDemand {
		if ok, err := x.indexed(ctx, user); err != nil || !ok {
			return false, err
		}
	}
	more, err := x.catchUp(ctx, user, session, until)
	if more {
		x.Touch(user, session)
	}
	return more, err
}

// build walks the user's sessions newest first (by last activity, over
// the status sets) from cursor ('+inf' or '(<score>'), catching each up,
// until every session is indexed or until passes.
func (x *Index) build(ctx context.Context, user, cursor string, until time.Time) (Coverage, error) {
	client, err := x.store.Conn().Client()
	if err != nil {
		return Coverage{Building: true}, err
	}
	sets := redisstore.Layout{Cluster: x.store.Conn().Cluster()}.UserIndex(user)
	for {
		cmds := make(rueidis.Commands, len(sets))
		for i, k := range sets {
			cmds[i] = client.B().Zrevrangebyscore().Key(k).Max(cursor).Min("-inf").Withscores().Limit(0, BuildPage).Build()
		}
		var page []rueidis.ZScore
		for _, r := range client.DoMulti(ctx, cmds...) {
			zs, err := r.AsZScores()
			if err != nil {
				return Coverage{Building: true, Since: since(cursor)}, redisstore.Wrap("search index: build", err)
			}
			page = append(page, zs...)
		}
		if len(page) == 0 {
			_, err := x.mark(ctx, user, "cursor", "")
			return Coverage{Building: err != nil}, err
		}
		// the newest of the three sets' pages first
		best := page[0]
		for _, z := range page[1:] {
			if z.Score > best.Score {
				best = z
			}
		}
		more, err := x.catchUp(ctx, user, best.Member, until)
		if err != nil || more {
			return Coverage{Building: true, Since: since(cursor)}, err
		}
		cursor = "(" + strconv.FormatFloat(best.Score, 'f', -1, 64)
		if _, err := x.mark(ctx, user, "cursor", cursor); err != nil {
			return Coverage{Building: true, Since: since(cursor)}, err
		}
		if time.Now().After(until) {
			return Coverage{Building: true, Since: since(cursor)}, nil
		}
	}
}

// since is the time a build cursor reached ('(<µs>').
func since(cursor string) time.Time {
	if len(cursor) < 2 || cursor[0] != '(' {
		return time.Time{}
	}
	f, err := strconv.ParseFloat(cursor[1:], 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMicro(int64(f))
}

// catchUp runs every registered step of the session until none has more
// or until passes, paced: after each step a pause as long as the step took
// (between minPause and maxPause), so other clients of the Redis wait for
// at most one step, never for a run of them sent back to back, and a
// catch-up (a search's or the worker's) takes at most about half of
// Redis's time. Returns whether more is left.
func (x *Index) catchUp(ctx context.Context, user, session string, until time.Time) (bool, error) {
	for _, step := range x.registered() {
		for {
			t := time.Now()
			more, err := step(ctx, user, session)
			if err != nil {
				return true, err
			}
			if !more {
				break
			}
			if err := pause(ctx, time.Since(t)); err != nil {
				return true, err
			}
			if !until.IsZero() && time.Now().After(until) {
				return true, nil
			}
		}
	}
	return false, nil
}

// Bounds of the pause between two catch-up steps (catchUp), as a staged
// append's between its steps.
const (
	minPause = 100 * time.Microsecond
	maxPause = 20 * time.Millisecond
)

// pause waits took, within minPause and maxPause, or until ctx is done.
func pause(ctx context.Context, took time.Duration) error {
	t := time.NewTimer(min(max(took, minPause), maxPause))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Touch queues the session for a background catch-up (a write found
// documents the index lacks), unless queued already or the queue is full.
// It never blocks.
func (x *Index) Touch(user, session string) {
	if x.mode == Off {
		return
	}
	x.enqueue(job{user, session})
}

func (x *Index) enqueue(j job) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.pending[j] {
		return
	}
	select {
	case x.queue <- j:
		x.pending[j] = true
	default:
		if x.OnDrop != nil {
			x.OnDrop()
		}
	}
}

func (x *Index) run() {
	defer close(x.done)
	for {
		select {
		case <-x.stop:
			return
		case j := <-x.queue:
			x.mu.Lock()
			delete(x.pending, j) // a touch from now on queues it again
			x.mu.Unlock()
			x.work(j)
		}
	}
}

// work runs one job, paced, within JobTimeout, honouring shutdown. Under
// on-demand a user without an index has nothing to catch up.
func (x *Index) work(j job) {
	ctx, cancel := context.WithTimeout(context.Background(), JobTimeout)
	defer cancel()
	go func() {
		select {
		case <-x.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := x.workErr(ctx, j)
	if err != nil && ctx.Err() == nil {
		x.logger.Warn("search index: not complete yet", "user_id", j.user, "session_id", j.session, "err", err)
	}
}

func (x *Index) workErr(ctx context.Context, j job) error {
	if x.mode == OnDemand {
		ok, err := x.indexed(ctx, j.user)
		if err != nil || !ok {
			return err
		}
	}
	if j.session != "" {
		_, err := x.catchUp(ctx, j.user, j.session, time.Time{})
		return err
	}
	cursor, err := x.mark(ctx, j.user, "open")
	if err != nil || cursor == "" || !x.claim(j.user) {
		return err // a request building it queues the rest when it stops
	}
	cov, err := x.build(ctx, j.user, cursor, time.Now().Add(JobTimeout/2))
	x.release(j.user)
	if cov.Building && err == nil {
		x.enqueue(j) // the rest later, after the others queued
	}
	return err
}

// Close stops the worker (a job under way is cancelled; queued ones are
// done at their next touch). Idempotent: every module sharing the Index
// calls it.
func (x *Index) Close(ctx context.Context) error {
	x.once.Do(func() { close(x.stop) })
	select {
	case <-x.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
