package redisstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/lua"
)

// ErrNotFound means the session, entry or context entry does not exist.
var ErrNotFound = errors.New("not found")

// SessionConfig holds the settings every session write needs.
type SessionConfig struct {
	TTLSeconds int `env:"SESSION_TTL_SECONDS" envDefault:"604800"`
	MaxEntries int `env:"SESSION_MAX_ENTRIES" envDefault:"0"`
}

// Validate refuses negative values.
func (c SessionConfig) Validate() error {
	if c.TTLSeconds < 0 {
		return envconf.Invalid("SESSION_TTL_SECONDS", "must be 0 (no expiry) or more, not %d", c.TTLSeconds)
	}
	if c.MaxEntries < 0 {
		return envconf.Invalid("SESSION_MAX_ENTRIES", "must be 0 (unbounded) or more, not %d", c.MaxEntries)
	}
	return nil
}

// Sessions is the session store: Cognee-compatible lists plus the sidecar's
// record and qa_id index, every write one Lua script (lua/session_*.lua).
// Values are the stored JSON bytes; encoding and validation are the
// cognee package's.
type Sessions struct {
	conn   *Conn
	common []string // ARGV[1..2] of every session script (then user, session)
}

// NewSessions returns the store over conn.
func NewSessions(conn *Conn, cfg SessionConfig) *Sessions {
	return &Sessions{
		conn:   conn,
		common: []string{strconv.Itoa(cfg.TTLSeconds), strconv.Itoa(cfg.MaxEntries)},
	}
}

// Keys returns the keys of a session, in the layout of the connected Redis.
func (s *Sessions) Keys(user, session string) SessionKeys {
	return s.layout().Session(user, session)
}

// exec runs a session script with the session's keys and the common ARGVs
// followed by args. A nil reply is returned as ErrNotFound.
func (s *Sessions) exec(ctx context.Context, script *lua.Script, user, session string, args ...string) (rueidis.RedisMessage, error) {
	client, err := s.conn.Client()
	if err != nil {
		return rueidis.RedisMessage{}, err
	}
	argv := make([]string, 0, len(s.common)+2+len(args))
	argv = append(append(argv, s.common...), user, session)
	argv = append(argv, args...)
	msg, err := script.Exec(ctx, client, s.Keys(user, session).List(), argv).ToMessage()
	if rueidis.IsRedisNil(err) {
		return msg, ErrNotFound
	}
	if err != nil {
		return msg, Wrap(script.Name, err)
	}
	return msg, nil
}

// Stored is what a storing script answered.
type Stored struct {
	Value   []byte // the stored value (the earlier one when not Created)
	Created bool   // written now; false: already there, nothing written
	Started bool   // this write started the session (created its record)
}

// storedPair decodes a storing script's reply: {1} stored, {2} stored and
// started the session, {0, earlier} already there (nothing written). The
// stored value of a new write is the caller's own (value), not echoed back.
func storedPair(msg rueidis.RedisMessage, value []byte) (Stored, error) {
	arr, err := msg.ToArray()
	if err != nil || len(arr) == 0 {
		return Stored{}, errors.New("unexpected script reply")
	}
	flag, err := arr[0].AsInt64()
	if err != nil {
		return Stored{}, err
	}
	if flag == 0 {
		if len(arr) != 2 {
			return Stored{}, errors.New("unexpected script reply")
		}
		v, err := arr[1].ToString()
		return Stored{Value: []byte(v)}, err
	}
	if flag == 2 {
		sessionsStarted.Inc()
	}
	return Stored{Value: value, Created: true, Started: flag == 2}, nil
}

// Append stores entry (encoded by cognee.NewQAEntry) under qaID. When the
// session already holds qaID it stores nothing and returns the stored entry
// with Created == false.
func (s *Sessions) Append(ctx context.Context, user, session, qaID string, entry []byte) (Stored, error) {
	msg, err := s.exec(ctx, lua.SessionAppend, user, session, qaID, string(entry))
	if err != nil {
		return Stored{}, err
	}
	st, err := storedPair(msg, entry)
	if err == nil && st.Created {
		entriesAppended.Inc()
	}
	return st, err
}

// UpdateEntry sets fields (name, encoded value pairs) of entry qaID and
// merges memify (a JSON object, or nil) into its memify_metadata. It returns
// the updated entry, or ErrNotFound.
func (s *Sessions) UpdateEntry(ctx context.Context, user, session, qaID string, fields [][2]string, memify []byte) ([]byte, error) {
	args := make([]string, 0, 2+2*len(fields))
	args = append(args, qaID, string(memify))
	for _, f := range fields {
		args = append(args, f[0], f[1])
	}
	msg, err := s.exec(ctx, lua.SessionEntryUpdate, user, session, args...)
	if err != nil {
		return nil, err
	}
	v, err := msg.ToString()
	if err == nil {
		countFeedback(fields)
	}
	return []byte(v), err
}

// Entry returns entry qaID, or ErrNotFound.
func (s *Sessions) Entry(ctx context.Context, user, session, qaID string) ([]byte, error) {
	msg, err := s.exec(ctx, lua.SessionEntryGet, user, session, qaID)
	if err != nil {
		return nil, err
	}
	v, err := msg.ToString()
	return []byte(v), err
}

// DeleteEntry removes entry qaID, or returns ErrNotFound.
func (s *Sessions) DeleteEntry(ctx context.Context, user, session, qaID string) error {
	return s.execFound(ctx, lua.SessionEntryDelete, user, session, qaID)
}

// execFound runs a script that answers 1 (done) or 0 (no such thing).
func (s *Sessions) execFound(ctx context.Context, script *lua.Script, user, session string, args ...string) error {
	msg, err := s.exec(ctx, script, user, session, args...)
	if err != nil {
		return err
	}
	n, err := msg.AsInt64()
	if err != nil {
		return Wrap(script.Name, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// AppendTrace stores one trace step (encoded by cognee.NewTrace).
func (s *Sessions) AppendTrace(ctx context.Context, user, session string, trace []byte) error {
	msg, err := s.exec(ctx, lua.SessionTraceAppend, user, session, string(trace))
	if err != nil {
		return err
	}
	if flag, _ := msg.AsInt64(); flag == 2 {
		sessionsStarted.Inc()
	}
	return nil
}

// AppendContext stores a session-context entry with id, unless one with that
// id exists: then it returns the stored one with Created == false.
func (s *Sessions) AppendContext(ctx context.Context, user, session, id string, entry []byte) (Stored, error) {
	msg, err := s.exec(ctx, lua.SessionContextAppend, user, session, id, string(entry))
	if err != nil {
		return Stored{}, err
	}
	return storedPair(msg, entry)
}

// UpdateContext merges patch (a JSON object) into context entry id.
func (s *Sessions) UpdateContext(ctx context.Context, user, session, id string, patch []byte) ([]byte, error) {
	msg, err := s.exec(ctx, lua.SessionContextUpdate, user, session, id, string(patch))
	if err != nil {
		return nil, err
	}
	v, err := msg.ToString()
	return []byte(v), err
}

// DeleteContext removes context entry id, or returns ErrNotFound.
func (s *Sessions) DeleteContext(ctx context.Context, user, session, id string) error {
	return s.execFound(ctx, lua.SessionContextDelete, user, session, id)
}

// Delete removes every key of the session, or returns ErrNotFound.
func (s *Sessions) Delete(ctx context.Context, user, session string) error {
	return s.execFound(ctx, lua.SessionDelete, user, session)
}

// SetTTL gives the session its own TTL (0 = no expiry) on every key at
// once, or returns ErrNotFound.
func (s *Sessions) SetTTL(ctx context.Context, user, session string, ttlSeconds int64) error {
	return s.execFound(ctx, lua.SessionTTLSet, user, session, strconv.FormatInt(ttlSeconds, 10))
}

// TTL returns the session's remaining TTL in seconds (-1 = no expiry), or
// ErrNotFound. It reads the record, or the entries list of a session only
// Cognee wrote.
func (s *Sessions) TTL(ctx context.Context, user, session string) (int64, error) {
	client, err := s.conn.Client()
	if err != nil {
		return 0, err
	}
	k := s.Keys(user, session)
	res := client.DoMulti(ctx,
		client.B().Ttl().Key(k.Record).Build(),
		client.B().Ttl().Key(k.Entries).Build(),
		client.B().Ttl().Key(k.Traces).Build(),
		client.B().Ttl().Key(k.Context).Build(),
	)
	for _, r := range res {
		ttl, err := r.AsInt64()
		if err != nil {
			return 0, Wrap("ttl", err)
		}
		if ttl != -2 {
			return ttl, nil
		}
	}
	return 0, ErrNotFound
}

// LastEntries returns the newest n entries, oldest first: LRANGE -n -1, so
// the cost is O(n) whatever the session's length.
func (s *Sessions) LastEntries(ctx context.Context, user, session string, n int) ([]string, error) {
	return s.lrange(ctx, s.Keys(user, session).Entries, int64(-n), -1)
}

// AllEntries returns every entry, oldest first.
func (s *Sessions) AllEntries(ctx context.Context, user, session string) ([]string, error) {
	return s.lrange(ctx, s.Keys(user, session).Entries, 0, -1)
}

// LastTraces returns the newest n trace steps (n <= 0: all), oldest first.
func (s *Sessions) LastTraces(ctx context.Context, user, session string, n int) ([]string, error) {
	return s.lrange(ctx, s.Keys(user, session).Traces, int64(-n), -1)
}

// Contexts returns every session-context entry, oldest first.
func (s *Sessions) Contexts(ctx context.Context, user, session string) ([]string, error) {
	return s.lrange(ctx, s.Keys(user, session).Context, 0, -1)
}

func (s *Sessions) lrange(ctx context.Context, key string, start, stop int64) ([]string, error) {
	client, err := s.conn.Client()
	if err != nil {
		return nil, err
	}
	if start > 0 { // n <= 0 asks for everything
		start = 0
	}
	vals, err := client.Do(ctx, client.B().Lrange().Key(key).Start(start).Stop(stop).Build()).AsStrSlice()
	if err != nil {
		return nil, Wrap("lrange", err)
	}
	return vals, nil
}
