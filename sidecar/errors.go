package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// Error is an API error: an HTTP status and a stable snake_case code, sent as
// the envelope {"error": {"code": "...", "message": "..."}}.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an *Error.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// BadRequest is a 400 with the given code.
func BadRequest(code, format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, code, format, args...)
}

// NotFound is a 404 with the code not_found.
func NotFound(format string, args ...any) *Error {
	return Errorf(http.StatusNotFound, "not_found", format, args...)
}

// Conflict is a 409 with the given code.
func Conflict(code, format string, args ...any) *Error {
	return Errorf(http.StatusConflict, code, format, args...)
}

// StatusClientClosed is recorded (nginx's 499) when the client hung up.
const StatusClientClosed = 499

type envelope struct {
	Error envelopeBody `json:"error"`
}

type envelopeBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteError writes e as the error envelope.
func WriteError(w http.ResponseWriter, e *Error) {
	if e.Status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	WriteJSON(w, e.Status, envelope{envelopeBody{Code: e.Code, Message: e.Message}})
}

// WriteJSON writes v as a JSON body with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only a programming error can get here (an unmarshalable type).
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal","message":"response could not be encoded"}}`)
	}
	WriteBody(w, status, body)
}

// WriteBody answers with a JSON body already encoded, and a newline. The
// Content-Length is set, so no body is sent chunked.
func WriteBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// refusalStatus is the one map from a store's refusals to HTTP.
var refusalStatus = []struct {
	kind   error
	status int
}{
	{redisstore.ErrNotFound, http.StatusNotFound},
	{redisstore.ErrConflict, http.StatusConflict},
	{redisstore.ErrPrecondition, http.StatusPreconditionFailed},
}

// refusal maps a store's refusal (redisstore.ErrNotFound and its kin, bare
// or as a *redisstore.Refusal with code and message) to its API error.
func refusal(err error) (*Error, bool) {
	for _, r := range refusalStatus {
		if !errors.Is(err, r.kind) {
			continue
		}
		var ref *redisstore.Refusal
		if errors.As(err, &ref) {
			return Errorf(r.status, ref.Code, "%s", ref.Message), true
		}
		code := strings.ReplaceAll(r.kind.Error(), " ", "_")
		return Errorf(r.status, code, "%s", r.kind.Error()), true
	}
	return nil, false
}

// errorFor maps any error a handler returns to what the client sees: API
// errors as they are, a store's refusals as 404/409/412, Redis's WRONGTYPE
// (a read meeting a key another program wrote) as 409 key_wrong_type, Redis outages as
// 503, everything else as a 500 whose detail goes to the log, never to the
// client.
//
// Before all that, a wait given up for shutdown (ErrShuttingDown), or any
// error of a request the drain cancelled, is 503 shutting_down.
func errorFor(ctx context.Context, logger *slog.Logger, redis *redisstore.Conn, route string, err error) *Error {
	if errors.Is(err, ErrShuttingDown) || errors.Is(context.Cause(ctx), ErrShuttingDown) {
		return shuttingDown()
	}
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	if e, ok := refusal(err); ok {
		return e
	}
	if redisstore.WrongType(err) {
		return Conflict(redisstore.CodeWrongType, "a key of this call holds another type of value than the sidecar stores there (another program wrote it); delete or repair the key")
	}
	if r, ok := redisstore.Refused(err); ok {
		redis.ReportRefusal(r)
		refusals.WithLabelValues(r.Code).Inc()
		logger.Warn("redis refused", "route", route, "code", r.Code, "err", err)
		return Errorf(http.StatusServiceUnavailable, r.Code, "%s; retry shortly", r.Message)
	}
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// The client hung up; nobody reads this answer.
		return Errorf(StatusClientClosed, "client_closed", "client closed the request")
	case deadline(ctx, err) && redis.Up():
		// The request's own deadline, with Redis answering its health
		// checks: a slow call, not an outage. Nothing is marked down and no
		// connection renewed (the health check alone decides that).
		logger.Warn("request deadline", "route", route, "err", err)
		return Errorf(http.StatusServiceUnavailable, "timeout",
			"the request did not finish within its deadline (SIDECAR_REQUEST_TIMEOUT); a write already sent may still be applied, retry it safely")
	case redisstore.IsUnavailable(err):
		if !deadline(ctx, err) {
			redis.ReportUnavailable() // a connection error; a deadline alone is not one
		}
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			logger.Warn("redis unavailable", "route", route, "err", err)
		}
		return Errorf(http.StatusServiceUnavailable, "redis_unavailable", "Redis is unavailable, retry shortly")
	default:
		logger.Error("request failed", "route", route, "err", err)
		return Errorf(http.StatusInternalServerError, "internal", "internal error")
	}
}

// deadline reports whether err is the request's own deadline: ctx's, or
// rueidis's reading of it (it may answer context.DeadlineExceeded a moment
// before ctx's own timer fires). Connection failures are other errors.
func deadline(ctx context.Context, err error) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
}
