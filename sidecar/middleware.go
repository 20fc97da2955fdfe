package sidecar

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"
)

// answerGrace is how long a 408 has to be written once the request's body
// stalled past the read deadline.
const answerGrace = 5 * time.Second

// route wraps one module handler: panic recovery, body limit, deadline, and
// the mapping of returned errors to the envelope.
func (h *Host) route(rt Route, logger *slog.Logger) http.Handler {
	timeout := h.cfg.RequestTimeout
	if rt.Timeout > 0 {
		timeout = rt.Timeout
	}
	limit := h.cfg.MaxBodyBytes
	if rt.MaxBodyBytes > 0 {
		limit = rt.MaxBodyBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sw, ok := w.(*statusWriter); ok {
			sw.routed = true
		}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				logger.Error("handler panic", "route", rt.Pattern, "panic", fmt.Sprint(p))
				WriteError(w, Errorf(http.StatusInternalServerError, "internal", "internal error"))
			}
		}()
		body := r.Body
		if r.ContentLength > limit {
			WriteError(w, Errorf(http.StatusRequestEntityTooLarge, "body_too_large", "request body is larger than %d bytes", limit))
			drain(body)
			return
		}
		if r.URL.RawQuery != "" {
			if err := rt.checkQuery(r.URL.RawQuery); err != nil {
				WriteError(w, err)
				return
			}
		}
		if rt.Stream {
			h.serveStream(w, r, rt, logger)
			return
		}
		if rt.Timeout > 0 {
			// A route that waits on purpose gets its wait on top of the
			// server's read and write deadlines.
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(h.cfg.ReadTimeout + rt.Timeout))
			_ = rc.SetWriteDeadline(time.Now().Add(h.cfg.WriteTimeout + rt.Timeout))
		}
		h.active.Add(1) // the drain waits for it (shutdown.go)
		defer h.active.Add(-1)
		defer watchUpload(r)()
		hd, refused := h.holdBody(r)
		defer hd.end()
		if refused != nil {
			WriteError(w, refused)
			drain(body)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		ctx = withAnswerHeaders(context.WithValue(ctx, holdKey{}, hd), w.Header())
		r = r.WithContext(ctx)
		if err := rt.Handler(w, r); err != nil {
			e := errorFor(ctx, logger, h.redis, rt.Pattern, err)
			if e.Status == http.StatusRequestTimeout {
				// The body stalled until the read deadline, and the write
				// deadline (set when the headers arrived) may have passed
				// with it: the 408 still gets its moment to be written.
				_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(answerGrace))
			}
			WriteError(w, e)
			if e.Status == http.StatusRequestEntityTooLarge || e.Code == "overloaded" {
				drain(body) // the rest of a body over the limit, or past the budget
			}
		}
	})
}

// serveStream runs a Stream route: no deadlines (the handler sets its
// own), no in-flight slot (shedOverload) and no API connection slot (the
// connection closes after the stream), its context ended by shutdown.
func (h *Host) serveStream(w http.ResponseWriter, r *http.Request, rt Route, logger *slog.Logger) {
	leaveConnCap(r.Context())
	w.Header().Set("Connection", "close")
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.stopping, cancel)
	defer stop()
	r = r.WithContext(withAnswerHeaders(ctx, w.Header()))
	if err := rt.Handler(w, r); err != nil {
		WriteError(w, errorFor(ctx, logger, h.redis, rt.Pattern, err))
	}
}

// gate answers 503 while the first connection to Redis is still being made,
// so no module sees a request it cannot serve.
func (h *Host) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-h.redis.Ready():
			next.ServeHTTP(w, r)
		default:
			WriteError(w, Errorf(http.StatusServiceUnavailable, "redis_unavailable", "Redis is not reachable yet; retry shortly"))
		}
	})
}

// authenticate requires "Authorization: Bearer <SIDECAR_API_TOKEN>" on every
// API call when a token is configured. Comparing SHA-256 digests in constant
// time leaks neither the token's bytes nor its length.
func (h *Host) authenticate(next http.Handler) http.Handler {
	if h.cfg.APIToken == "" {
		return next
	}
	want := sha256.Sum256([]byte(h.cfg.APIToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 9110 §11.1): "bearer" works.
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(got))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sidecar"`)
			WriteError(w, Errorf(http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// instrument counts and times every API request by route pattern and status,
// and turns ServeMux's plain-text 404/405 into the error envelope. A path
// that is not clean ("//v1/sessions", "/v1/./x") is a JSON 404 naming the
// clean one, instead of ServeMux's HTML redirect.
func (h *Host) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		if clean := cleanPath(r.URL.Path); clean != r.URL.Path {
			WriteError(sw, NotFound("no such route: the path is not clean (use %s)", clean))
		} else {
			next.ServeHTTP(sw, r)
		}
		route := r.Pattern
		if route == "" && sw.code() == http.StatusMethodNotAllowed {
			route = h.pathPattern(r) // the route exists: label 405s with it
		}
		if route == "" {
			route = "unmatched"
		}
		h.metrics.observe(route, sw.code(), time.Since(start))
	})
}

// cleanPath is path.Clean keeping a trailing slash, as ServeMux cleans.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// pathPattern is the pattern of the route r's path matches with another
// method ("" when none), for labelling a 405.
func (h *Host) pathPattern(r *http.Request) string {
	_, pattern := h.paths.Handler(r)
	return pattern
}

// statusWriter records the status and rewrites the mux's own 404/405 bodies.
type statusWriter struct {
	http.ResponseWriter
	status  int
	routed  bool // a module route was reached
	swallow bool // the envelope replaced the mux's body
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if !w.routed && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		w.swallow = true
		h := w.ResponseWriter.Header()
		h.Del("X-Content-Type-Options")
		e := NotFound("no such route")
		if code == http.StatusMethodNotAllowed {
			e = Errorf(code, "method_not_allowed", "method not allowed on this route (allowed: %s)", h.Get("Allow"))
		}
		WriteError(w.ResponseWriter, e)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Unwrap lets http.ResponseController reach the real writer (flush, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
