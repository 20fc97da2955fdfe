package lua

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// Reply is a script's answer in the one reply convention of the scripts
// (lib/reply.lua): done ('ok'), or done before by a retried write ('dup':
// nothing written now), with the values the script's header names.
type Reply struct {
	Dup    bool
	Values []rueidis.RedisMessage
	// Abort is the session's pending abort request (µs; 0: none), which a
	// session write's answer carries on its tag ('ok@<µs>': session.reply).
	Abort int64
}

// IndexBuild is the answer of a script that needs an id index of the
// session built first ({'index_build', which}: nothing written but index
// steps): the caller builds it a step at a time, then runs the script
// again.
type IndexBuild struct {
	Which string // "qa" or "context"
}

func (e *IndexBuild) Error() string { return "the " + e.Which + " index must be built first" }

// Decode reads a script's answer msg (script names it in errors): 'ok' and
// 'dup' give the Reply; 'missing' redisstore.ErrNotFound; 'refused' the
// store refusal of its code (409, nothing written); 'index_build' an
// *IndexBuild. Anything else is an error: a script answers in the
// convention or not at all.
func Decode(script string, msg rueidis.RedisMessage) (Reply, error) {
	arr, err := msg.ToArray()
	if err != nil || len(arr) == 0 {
		return Reply{}, fmt.Errorf("script %s: answer is not a tagged reply", script)
	}
	tag, err := arr[0].ToString()
	if err != nil {
		return Reply{}, fmt.Errorf("script %s: answer is not a tagged reply", script)
	}
	rest := arr[1:]
	var abort int64
	if t, at, ok := strings.Cut(tag, "@"); ok && (t == "ok" || t == "dup") {
		if abort, err = strconv.ParseInt(at, 10, 64); err != nil {
			return Reply{}, fmt.Errorf("script %s: tag %q: %w", script, tag, err)
		}
		tag = t
	}
	switch tag {
	case "ok":
		return Reply{Values: rest, Abort: abort}, nil
	case "dup":
		return Reply{Dup: true, Values: rest, Abort: abort}, nil
	case "missing":
		return Reply{}, redisstore.ErrNotFound
	case "refused":
		code, text, err := twoStrings(rest)
		if err != nil {
			return Reply{}, fmt.Errorf("script %s: refusal: %w", script, err)
		}
		return Reply{}, redisstore.Refuse(redisstore.ErrConflict, code, "%s", text)
	case "index_build":
		if len(rest) != 1 {
			return Reply{}, fmt.Errorf("script %s: index_build: want one value", script)
		}
		which, err := rest[0].ToString()
		if err != nil {
			return Reply{}, fmt.Errorf("script %s: index_build: %w", script, err)
		}
		return Reply{}, &IndexBuild{Which: which}
	}
	return Reply{}, fmt.Errorf("script %s: unknown reply %q", script, tag)
}

// Refusal is the error of a refusal or index build in msg, or nil for any
// other answer: for a caller that decodes the rest of an answer itself.
func Refusal(script string, msg rueidis.RedisMessage) error {
	arr, err := msg.ToArray()
	if err != nil || len(arr) == 0 {
		return nil
	}
	if tag, err := arr[0].ToString(); err != nil || (tag != "refused" && tag != "index_build" && tag != "missing") {
		return nil
	}
	_, err = Decode(script, msg)
	return err
}

func twoStrings(vals []rueidis.RedisMessage) (string, string, error) {
	if len(vals) != 2 {
		return "", "", errors.New("want two values")
	}
	a, err := vals[0].ToString()
	if err != nil {
		return "", "", err
	}
	b, err := vals[1].ToString()
	return a, b, err
}

// Int is value i as an integer.
func (r Reply) Int(i int) (int64, error) {
	if i >= len(r.Values) {
		return 0, fmt.Errorf("reply has %d values, want at least %d", len(r.Values), i+1)
	}
	return r.Values[i].AsInt64()
}

// String is value i as a string.
func (r Reply) String(i int) (string, error) {
	if i >= len(r.Values) {
		return "", fmt.Errorf("reply has %d values, want at least %d", len(r.Values), i+1)
	}
	return r.Values[i].ToString()
}

// Flag is value i as a boolean (an integer other than 0).
func (r Reply) Flag(i int) (bool, error) {
	n, err := r.Int(i)
	return n != 0, err
}
