package sidecar

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"runtime/debug"
	"sync"
	"time"
)

// The in-flight byte budget: what the requests being served hold in
// memory (their bodies as they are read and decoded, their answers as they
// are read from Redis and written) is counted against one budget, derived
// from the pod's memory limit (SIDECAR_INFLIGHT_BYTES). A request whose
// bytes do not fit waits for room (a body briefly, an answer within its
// request's deadline), then is answered 503
// overloaded with Retry-After: the pod sheds work, it is never OOM-killed,
// whatever the body and answer caps are set to.

// Costs: a byte of a request body or of an answer is held more than once
// while it is served (the body read, its decoded fields, the script's
// arguments; the reply as Redis sent it, the answer built from it), so it
// counts for that many bytes of the budget. Measured in BENCHMARKS.md
// ("In-flight byte budget").
const (
	bodyCost   = 6
	answerCost = 3
)

// bodyWait is how long a request body waits for room in the budget before
// it is answered 503 overloaded (its bytes wait in the connection
// meanwhile). An answer waits its turn within the request's deadline, as a
// read does for Redis: it holds nothing while it waits.
const bodyWait = time.Second

// defaultBudget is the budget without a memory limit (no GOMEMLIMIT, no
// container limit).
const defaultBudget = 512 << 20

// budgetBytes is the budget: set, else half the memory limit, else
// defaultBudget.
func budgetBytes(set int64) int64 {
	if set > 0 {
		return set
	}
	if limit := debug.SetMemoryLimit(-1); limit > 0 && limit != 1<<63-1 {
		return limit / 2
	}
	return defaultBudget
}

// budget is the host's one in-flight byte budget.
type budget struct {
	limit int64
	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed (and replaced) when bytes are given back
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit, freed: make(chan struct{})}
}

// take counts n bytes if they fit.
func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// wait is take, waiting up to patience (and at most until ctx ends) for
// room.
func (b *budget) wait(ctx context.Context, n int64, patience time.Duration) bool {
	var timer *time.Timer
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(patience)
			defer timer.Stop()
		}
		select {
		case <-freed:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (b *budget) give(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse is the bytes counted now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// hold is one request's share of the budget, given back when it ends.
type hold struct {
	b  *budget
	mu sync.Mutex
	n  int64
}

func (h *hold) held() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *hold) add(n int64) {
	h.mu.Lock()
	h.n += n
	h.mu.Unlock()
}

// shrink gives back n of the request's bytes (at most what it holds).
func (h *hold) shrink(n int64) {
	h.mu.Lock()
	n = min(n, h.n)
	h.n -= n
	h.mu.Unlock()
	h.b.give(n)
}

func (h *hold) end() { h.shrink(1 << 62) }

type holdKey struct{}

// errOverloaded is the answer to a request the budget cannot hold.
func errOverloaded() *Error {
	overloaded.WithLabelValues("bytes").Inc()
	return Errorf(http.StatusServiceUnavailable, "overloaded",
		"the sidecar holds as many bytes in flight as its memory allows (SIDECAR_INFLIGHT_BYTES); retry shortly")
}

// ReserveAnswer counts an answer of at most max bytes against the host's
// in-flight byte budget for the rest of the request, before the handler
// reads it, and returns the cap to read it with: max, or less when one
// answer of max bytes would take more than a quarter of the budget (the answer is
// then cut as SIDECAR_MAX_ANSWER_BYTES cuts it, and says so). A request
// the budget cannot hold before its deadline gets the 503 overloaded error,
// to return as is. done(n) gives back what the answer did not use once it
// is read (n: its size). Outside a host's route it reserves nothing.
func ReserveAnswer(ctx context.Context, max int) (limit int, done func(n int), err error) {
	h, ok := ctx.Value(holdKey{}).(*hold)
	if !ok {
		return max, func(int) {}, nil
	}
	limit = int(min(int64(max), h.b.limit/4/answerCost))
	want := int64(limit) * answerCost
	patience := bodyWait
	if d, ok := ctx.Deadline(); ok {
		patience = time.Until(d)
	}
	if !h.b.wait(ctx, want, patience) {
		return 0, nil, errOverloaded()
	}
	h.add(want)
	return limit, func(n int) { h.shrink(want - int64(min(n, limit))*answerCost) }, nil
}

// holdBody counts the request's body against the budget: one announced by
// Content-Length whole once its first bytes have arrived, before the
// handler runs (waiting briefly for room), one sent in chunks as it
// arrives (a read past the budget fails with 503
// overloaded). A body that could never fit, the budget empty, is 413: this
// pod's memory cannot take it, and a retry would not help. A non-nil error
// refuses the request.
func (h *Host) holdBody(r *http.Request) (*hold, *Error) {
	hd := &hold{b: h.budget}
	if r.ContentLength > 0 {
		n := r.ContentLength * bodyCost
		if n > h.budget.limit {
			return hd, errBodyPastBudget(h.budget)
		}
		// The body's first bytes come before its share: a client that
		// announces a body and sends none holds nothing that others wait
		// behind (its read deadline answers it 408).
		first := bufio.NewReaderSize(r.Body, firstBytes)
		r.Body = bufferedBody{Reader: first, Closer: r.Body}
		if _, err := first.Peek(1); err != nil {
			return hd, nil // the handler's read meets the same error
		}
		if !h.budget.wait(r.Context(), n, bodyWait) {
			return hd, errOverloaded()
		}
		hd.add(n)
	} else if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
		r.Body = &heldBody{ReadCloser: r.Body, h: hd}
	}
	return hd, nil
}

// firstBytes is the buffer a body announced by Content-Length is read
// through: its first bytes are awaited before it is counted.
const firstBytes = 4096

// bufferedBody is a request body read through a bufio.Reader.
type bufferedBody struct {
	*bufio.Reader
	io.Closer
}

// errBodyPastBudget is the answer to a body bigger than the whole budget
// can hold.
func errBodyPastBudget(b *budget) *Error {
	return Errorf(http.StatusRequestEntityTooLarge, "body_too_large",
		"request body is larger than this sidecar's memory allows (%d bytes: SIDECAR_INFLIGHT_BYTES / %d)", b.limit/bodyCost, bodyCost)
}

// heldBody counts a chunked body's bytes as they arrive.
type heldBody struct {
	io.ReadCloser
	h *hold
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		cost := int64(n) * bodyCost
		if b.h.held()+cost > b.h.b.limit {
			return 0, errBodyPastBudget(b.h.b)
		}
		if !b.h.b.take(cost) {
			return 0, errOverloaded()
		}
		b.h.add(cost)
	}
	return n, err
}
