package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/rueidis"
)

// ErrUnavailable marks every error that means "Redis cannot be reached right
// now" (not connected yet, connection refused or reset, timeouts, a replica
// promoting). The HTTP layer answers it with 503 and Retry-After.
var ErrUnavailable = errors.New("redis unavailable")

// A store's refusals, shared by every module: the host answers them once
// for all (404 not_found, 409, 412) with the error envelope, so handlers
// return them as they are. Return one bare, or with Refuse to give the
// answer its API code and a message for a person.
var (
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrPrecondition = errors.New("precondition failed")
)

// Refusal is a refusal with the API's snake_case code and a message; it
// wraps one of ErrNotFound, ErrConflict and ErrPrecondition.
type Refusal struct {
	Kind    error
	Code    string
	Message string
}

func (r *Refusal) Error() string { return r.Message }
func (r *Refusal) Unwrap() error { return r.Kind }

// Refuse builds a *Refusal of kind with code and a formatted message.
func Refuse(kind error, code, format string, args ...any) error {
	return &Refusal{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound is the common refusal: ErrNotFound with the code not_found.
func NotFound(format string, args ...any) error {
	return Refuse(ErrNotFound, "not_found", format, args...)
}

// Wrap adds context to a Redis error and marks it ErrUnavailable when it
// means Redis cannot serve right now.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if IsUnavailable(err) && !errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// IsUnavailable tells an outage (retry later) from a bug or a bad request.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, rueidis.ErrClosing) || errors.Is(err, rueidis.ErrNoSlot) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var redisErr *rueidis.RedisError
	if errors.As(err, &redisErr) {
		// Replies that mean "not now" rather than "wrong": on a Cluster,
		// CLUSTERDOWN while a failover elects a replica, TRYAGAIN while a
		// slot moves, and MOVED/ASK when rueidis gave up following a slot
		// map that is still changing.
		msg := redisErr.Error()
		for _, p := range []string{"LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "NOREPLICAS", "MOVED", "ASK"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
	}
	return false
}

// Redis's own refusals: replies that mean "Redis will not do this now" and
// say why. The host answers each with 503, Retry-After and its own code, so
// a caller can tell a full Redis from a replica from a bug.
type RedisRefusal struct {
	Prefix  string // the reply's first word (OOM, READONLY, ...)
	Code    string // the API code: redis_oom, redis_readonly, ...
	Message string // for a person, also the readiness reason
	// Outage: the connection itself may be stale (a failover, a restart),
	// so the caller marks Redis down and the health check renews the
	// connections. OOM and BUSY are not: the same connection will do once
	// Redis has memory or the script ends.
	Outage bool
}

// RedisRefusals lists every refusal the sidecar classifies.
var RedisRefusals = []RedisRefusal{
	{"OOM", "redis_oom", "Redis is out of memory (maxmemory reached): writes are refused until memory is freed", false},
	{"READONLY", "redis_readonly", "Redis is a read-only replica: writes need the primary (after a failover, the connection is renewed)", true},
	{"MASTERDOWN", "redis_masterdown", "Redis is a replica that lost its primary", true},
	{"LOADING", "redis_loading", "Redis is loading its data set into memory", true},
	{"BUSY", "redis_busy", "Redis is busy running a long script", false},
	{"CLUSTERDOWN", "redis_clusterdown", "the Redis Cluster is down (a failover may be in progress)", true},
	{"TRYAGAIN", "redis_tryagain", "the Redis Cluster is moving a slot", true},
	{"NOREPLICAS", "redis_noreplicas", "Redis has too few replicas to accept writes (min-replicas-to-write)", false},
}

// Refused returns the refusal err carries, if Redis refused the call.
func Refused(err error) (RedisRefusal, bool) {
	var redisErr *rueidis.RedisError
	if !errors.As(err, &redisErr) {
		return RedisRefusal{}, false
	}
	msg := redisErr.Error()
	for _, r := range RedisRefusals {
		if strings.HasPrefix(msg, r.Prefix+" ") || msg == r.Prefix {
			return r, true
		}
	}
	return RedisRefusal{}, false
}

// CodeWrongType is the API code of a key holding another type of value
// than the sidecar keeps there: the scripts' own type checks answer it,
// and so does Redis's WRONGTYPE (WrongType).
const CodeWrongType = "key_wrong_type"

// WrongType is the one check of Redis's WRONGTYPE reply: a command met a
// key holding another type than it works on (another program wrote the
// key). It is the reply's first word, or inside a script error's message
// (a redis.call's reply as EVAL reports it). The host answers it 409
// key_wrong_type, so a read that meets such a key answers as the writes'
// own type checks do.
func WrongType(err error) bool {
	var redisErr *rueidis.RedisError
	return errors.As(err, &redisErr) && strings.Contains(redisErr.Error(), "WRONGTYPE")
}

// AsWrongType is err as the 409 key_wrong_type refusal with the message
// format gives, when err is Redis's WRONGTYPE (WrongType); nil for any
// other error.
func AsWrongType(err error, format string, args ...any) error {
	if !WrongType(err) {
		return nil
	}
	return Refuse(ErrConflict, CodeWrongType, format, args...)
}
