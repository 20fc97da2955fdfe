package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// Event is one event of a stream.
type Event struct {
	ID   ID
	Type string
	Data string // JSON
	// watch is the stream's watch mark ("<until ms>:<since ms>") a
	// session's deleted event carries: the delete removed the mark
	// (lib/events.lua, xadd).
	watch string
}

// Store is the module's writes (over the shared session runner) and reads
// of event streams.
type Store struct{ *sessionstore.Store }

func (s *Store) layout() redisstore.Layout { return redisstore.Layout{Cluster: s.Conn().Cluster()} }

// SessionKey and UserKey are the stream keys.
func (s *Store) SessionKey(user, session string) string {
	return s.layout().SessionEvents(user, session)
}

// UserKey is the user's stream key.
func (s *Store) UserKey(user string) string { return s.layout().UserEvents(user) }

// UserWatchKey is the user's stream's watch marker (UserWatchFamily); a
// session's stream is marked in the user's marker (WatchField).
func (s *Store) UserWatchKey(user string) string { return s.layout().UserKey(UserWatchFamily, user) }

// mark is where a stream's watch is marked: the user's marker, and for a
// session's stream the keys whose existence says the session exists (a
// session gone is not marked: no field of the marker names a deleted
// session), for the user's stream its own key (session "" then).
type mark struct {
	marker, key, session string
	exists               []string
}

// sessionMark and userMark are the marks of a session's and a user's
// stream.
func (s *Store) sessionMark(user, session string) mark {
	return mark{marker: s.layout().UserMarker(user), session: session, exists: s.existsKeys(user, session)}
}

// read is the command that reads m's mark ("<until ms>:<since ms>").
func (m mark) read(c rueidis.Client) rueidis.Completed {
	if m.key != "" {
		return c.B().Get().Key(m.key).Build()
	}
	return c.B().Hget().Key(m.marker).Field(WatchField.Name + ":" + m.session).Build()
}

// userMark is the mark of the user's stream.
func (s *Store) userMark(user string) mark {
	return mark{marker: s.layout().UserMarker(user), key: s.UserWatchKey(user)}
}

// watchMarkers marks the streams of markers watched for grace from now
// (events_watch.lua, pipelined) and returns, per marker, since when the
// stream has been watched without a break (Redis time, ms), or the error
// of its call: a *redisstore.Refusal when the user is being erased,
// redisstore.ErrNotFound when the session no longer exists (nothing
// marked).
func watchMarkers(ctx context.Context, c rueidis.Client, grace time.Duration, markers []mark) ([]uint64, []error) {
	ms := strconv.FormatInt(grace.Milliseconds(), 10)
	calls := make([]lua.Call, len(markers))
	for i, k := range markers {
		keys := []string{k.marker}
		if k.key != "" {
			keys = append(keys, k.key)
		} else {
			keys = append(keys, k.exists...)
		}
		calls[i] = lua.Call{Keys: keys, Args: []string{ms, k.session}}
	}
	since := make([]uint64, len(markers))
	errs := make([]error, len(markers))
	for i, res := range luaScripts.Watch.ExecMulti(ctx, c, calls...) {
		msg, err := res.ToMessage()
		if err != nil {
			errs[i] = redisstore.Wrap(luaScripts.Watch.Name, err)
			continue
		}
		r, err := lua.Decode(luaScripts.Watch.Name, msg)
		if err != nil {
			errs[i] = err
			continue
		}
		v, err := r.String(0)
		if err == nil {
			since[i], err = strconv.ParseUint(v, 10, 64)
		}
		if err != nil {
			errs[i] = redisstore.Wrap(luaScripts.Watch.Name, err)
		}
	}
	return since, errs
}

// Publish appends a custom event to the session's stream and returns its
// id; with an Idempotency-Key key already seen (the session keeps its 1 000
// newest) it writes nothing and returns the first publish's id, created
// false.
func (s *Store) Publish(ctx context.Context, user, session, typ, data, key string) (id string, created bool, err error) {
	r, err := s.Run(ctx, luaScripts.Custom, user, session, typ, data, key)
	if errors.Is(err, redisstore.ErrNotFound) {
		return "", false, redisstore.NotFound("no session %s/%s", user, session)
	}
	if err != nil {
		return "", false, err
	}
	id, err = r.String(0)
	return id, !r.Dup, redisstore.Wrap(luaScripts.Custom.Name, err)
}

// Abort sets (set true) or clears the session's abort request. It returns
// the request's time (µs; 0 when cleared) and whether this call changed it.
func (s *Store) Abort(ctx context.Context, user, session string, set bool) (int64, bool, error) {
	op := "clear"
	if set {
		op = "set"
	}
	r, err := s.Run(ctx, luaScripts.Abort, user, session, op)
	if errors.Is(err, redisstore.ErrNotFound) {
		return 0, false, redisstore.NotFound("no session %s/%s", user, session)
	}
	if err != nil {
		return 0, false, err
	}
	at, err := r.String(0)
	if err != nil {
		return 0, false, redisstore.Wrap(luaScripts.Abort.Name, err)
	}
	var us int64
	if at != "" {
		if _, err := fmt.Sscan(at, &us); err != nil {
			return 0, false, redisstore.Wrap(luaScripts.Abort.Name, err)
		}
	}
	return us, !r.Dup, nil
}

// existsKeys are the keys whose existence says the session exists: its
// record, and Cognee's lists (a session only Cognee wrote).
func (s *Store) existsKeys(user, session string) []string {
	k := s.Keys(user, session)
	return []string{k.Record, k.Entries, k.Traces, k.Context}
}

// SessionExists reports whether the session exists (existsKeys), or, with
// tombstone, its event stream (a deleted session's tombstone, which a
// resuming reader still gets its deleted event from).
func (s *Store) SessionExists(ctx context.Context, user, session string, tombstone bool) (bool, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return false, err
	}
	keys := s.existsKeys(user, session)
	if tombstone {
		keys = append(keys, s.SessionKey(user, session))
	}
	n, err := client.Do(ctx, client.B().Exists().Key(keys...).Build()).AsInt64()
	if err != nil {
		return false, redisstore.Wrap("exists", err)
	}
	return n > 0, nil
}

// parseEntries decodes XRANGE/XREAD entries.
func parseEntries(entries []rueidis.XRangeEntry) []Event {
	out := make([]Event, 0, len(entries))
	for _, e := range entries {
		id, ok := ParseID(e.ID)
		if !ok {
			continue
		}
		out = append(out, Event{ID: id, Type: e.FieldValues["t"], Data: e.FieldValues["d"], watch: e.FieldValues["w"]})
	}
	return out
}

// readAfter reads up to n events of stream key after id.
func readAfter(ctx context.Context, c rueidis.Client, key string, after ID, n int64) ([]Event, error) {
	entries, err := c.Do(ctx, c.B().Xrange().Key(key).Start("("+after.String()).End("+").Count(n).Build()).AsXRange()
	if err != nil {
		if rueidis.IsRedisNil(err) {
			return nil, nil
		}
		return nil, redisstore.Wrap("xrange", err)
	}
	return parseEntries(entries), nil
}

// lastID is the id of the stream's newest event (zero for none).
func lastID(ctx context.Context, c rueidis.Client, key string) (ID, error) {
	entries, err := c.Do(ctx, c.B().Xrevrange().Key(key).End("+").Start("-").Count(1).Build()).AsXRange()
	if err != nil && !rueidis.IsRedisNil(err) {
		return ID{}, redisstore.Wrap("xrevrange", err)
	}
	if len(entries) == 0 {
		return ID{}, nil
	}
	id, _ := ParseID(entries[0].ID)
	return id, nil
}

// gapAfter tells a reconnecting reader whether events after its id were
// trimmed, and the oldest id kept (zero: none). Trimming removes the
// oldest events, so nothing after `after` is lost while the oldest kept
// event is at or before it; past it, events were lost unless the stream
// never trimmed any (Redis 7's entries-added equals its length).
func gapAfter(ctx context.Context, c rueidis.Client, key string, after ID) (bool, ID, error) {
	entries, err := c.Do(ctx, c.B().Xrange().Key(key).Start("-").End("+").Count(1).Build()).AsXRange()
	if err != nil && !rueidis.IsRedisNil(err) {
		return false, ID{}, redisstore.Wrap("xrange", err)
	}
	if len(entries) == 0 {
		return false, ID{}, nil
	}
	oldest, _ := ParseID(entries[0].ID)
	if !after.Less(oldest) {
		return false, oldest, nil
	}
	info, err := c.Do(ctx, c.B().XinfoStream().Key(key).Build()).AsMap()
	if err == nil {
		a, l := info["entries-added"], info["length"]
		added, err1 := a.AsInt64()
		length, err2 := l.AsInt64()
		if err1 == nil && err2 == nil && added == length {
			return false, oldest, nil
		}
	}
	return true, oldest, nil
}
