package sidecar

import (
	"context"
	"net/http"
	"sync"
)

// answerHeaders is the header of the answer a request will get, reachable
// from code deep in a call (a store) through the request's context.
type answerHeaders struct {
	mu sync.Mutex
	h  http.Header
}

type answerHeadersKey struct{}

func withAnswerHeaders(ctx context.Context, h http.Header) context.Context {
	return context.WithValue(ctx, answerHeadersKey{}, &answerHeaders{h: h})
}

// SetAnswerHeader sets header key of the answer to the request whose
// context ctx is (a route handler's r.Context() or one derived from it),
// when called before the answer is written: a store shared by several
// modules can so add a header to every answer it takes part in (the
// session's Sidecar-Abort-Requested). Outside a request it does nothing.
// Safe from several goroutines of one request.
func SetAnswerHeader(ctx context.Context, key, value string) {
	a, ok := ctx.Value(answerHeadersKey{}).(*answerHeaders)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.h.Set(key, value)
}

// WithoutAnswerHeaders is ctx for work a request does on other sessions'
// behalf (a user search building the user's index): their stores'
// SetAnswerHeader calls do not reach the request's answer.
func WithoutAnswerHeaders(ctx context.Context) context.Context {
	return context.WithValue(ctx, answerHeadersKey{}, nil)
}

// TruncatedHeader says an answer holds fewer elements than asked for
// because it reached its byte cap (SIDECAR_MAX_ANSWER_BYTES) or its count
// cap: never a silent cut.
const TruncatedHeader = "Sidecar-Truncated"

// MarkTruncated sets TruncatedHeader: true on w's answer when cut; it
// must run before the answer is written.
func MarkTruncated(w http.ResponseWriter, cut bool) {
	if cut {
		w.Header().Set(TruncatedHeader, "true")
	}
}
