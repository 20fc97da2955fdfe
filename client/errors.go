package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Error is a non-2xx answer of the sidecar: its status and the error
// envelope {"error": {"code", "message"}}. Match on Code (or with IsNotFound,
// IsConflict, IsUnavailable and errors.Is), never on Message.
type Error struct {
	Status  int    // HTTP status
	Code    string // the envelope's snake_case code (the Code* constants); "" when the body was not an envelope
	Message string // human text; the start of the body when it was not an envelope
	// RetryAfter is the Retry-After header (sent with every 503:
	// redis_unavailable, shutting_down, ...); 0 when absent.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("sidecar: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	}
	return fmt.Sprintf("sidecar: %d %s: %s", e.Status, e.Code, e.Message)
}

// Is maps the lock and lifecycle codes to the package's sentinel errors, so
// errors.Is(err, ErrHeld) works on a wrapped *Error.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrHeld:
		return e.Code == CodeLockHeld
	case ErrLost:
		return e.Code == CodeLockLost
	case ErrNotHeld:
		return e.Code == CodeNotHeld
	case ErrNotOwner:
		return e.Code == CodeNotOwner
	case ErrSessionEnded:
		return e.Code == CodeSessionEnded
	}
	return false
}

// Error codes of the envelope (openapi.json, schema Error).
const (
	CodeInvalidID            = "invalid_id"
	CodeInvalidJSON          = "invalid_json"
	CodeInvalidField         = "invalid_field"
	CodeUnknownField         = "unknown_field"
	CodeInvalidQuery         = "invalid_query"
	CodeInvalidCursor        = "invalid_cursor"
	CodeUnknownParameter     = "unknown_parameter"
	CodeInvalidBody          = "invalid_body"
	CodeUnauthorized         = "unauthorized"
	CodeNotFound             = "not_found"
	CodeNotHeld              = "not_held"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeLockHeld             = "lock_held"
	CodeLockLost             = "lock_lost"
	CodeNotOwner             = "not_owner"
	CodeLockKeyConflict      = "lock_key_conflict"
	CodeSessionEnded         = "session_ended"
	CodeKeyWrongType         = "key_wrong_type"
	CodeStateUnreadable      = "state_unreadable"
	CodeBodyTooLarge         = "body_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeRedisUnavailable     = "redis_unavailable"
	CodeShuttingDown         = "shutting_down"
	CodeInternal             = "internal"
)

// Sentinel errors, matched with errors.Is on an *Error (or an error
// wrapping one).
var (
	// ErrHeld: the lock was held for the whole wait (409 lock_held).
	ErrHeld = errors.New("client: lock held")
	// ErrLost: the lease's token no longer holds the lock (409 lock_lost),
	// or it could not be refreshed before its TTL ran out.
	ErrLost = errors.New("client: lock lost")
	// ErrNotHeld: release found nobody holding the lock (404 not_held).
	ErrNotHeld = errors.New("client: lock not held")
	// ErrNotOwner: release found another holder (409 not_owner).
	ErrNotOwner = errors.New("client: lock held by another owner")
	// ErrReleased is Err of a lease after Release.
	ErrReleased = errors.New("client: lease released")
	// ErrSessionEnded: complete after fail or the other way round (409
	// session_ended).
	ErrSessionEnded = errors.New("client: session already ended")
)

// IsNotFound reports whether err is a 404 answer: an unknown session, entry
// or context entry (not_found), or the release of a lock nobody holds
// (not_held).
func IsNotFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

// IsConflict reports whether err is a 409 answer: lock_held, lock_lost,
// not_owner, lock_key_conflict or session_ended.
func IsConflict(err error) bool { return hasStatus(err, http.StatusConflict) }

// IsUnavailable reports whether err is a 503 answer (Redis unreachable or
// too slow, the sidecar overloaded or shutting down): retry after the
// *Error's RetryAfter.
func IsUnavailable(err error) bool { return hasStatus(err, http.StatusServiceUnavailable) }

func hasStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// maxMessage bounds the Message taken from a body that is not an envelope
// (a proxy's HTML page, say).
const maxMessage = 512

// errorFrom builds the *Error of a non-2xx answer.
func errorFrom(status int, header http.Header, body []byte) *Error {
	e := &Error{Status: status, RetryAfter: retryAfter(header.Get("Retry-After"))}
	var env struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Code != "" {
		e.Code, e.Message = env.Error.Code, env.Error.Message
		return e
	}
	msg := strings.ToValidUTF8(strings.TrimSpace(string(body)), "\uFFFD")
	if len(msg) > maxMessage {
		cut := maxMessage
		for !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	e.Message = msg
	return e
}

// retryAfter reads Retry-After: delay seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t).Round(time.Second), 0)
	}
	return 0
}
