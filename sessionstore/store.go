package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Store is the session runner every module that writes a session shares:
// it runs a session script (a module's script on the session core,
// lua/lib/session.lua) with the core's per-call contract, so the write,
// the record, the indexes and the sliding TTL move together. It also holds
// what concerns every key of a session whichever module wrote it: delete,
// TTL, the record and the reads across sessions. Modules keep their own
// writes next to their handlers (sessions/store.go, usage/store.go).
type Store struct {
	conn   *redisstore.Conn
	cfg    Config
	common []string // ARGV[1] of every session script: the core's settings
	ended  *prometheus.CounterVec
}

// New returns the runner over conn with the session settings cfg (an
// EventsMaxLen of 0 is the default, 1000; an empty Events is "always", as
// a Config made in code before SESSION_EVENTS existed meant).
func New(conn *redisstore.Conn, cfg Config) *Store {
	if cfg.EventsMaxLen <= 0 {
		cfg.EventsMaxLen = DefaultEventsMaxLen
	}
	if cfg.Events == "" {
		cfg.Events = EventsAlways
	}
	mode := "a"
	if cfg.Events == EventsWatched {
		mode = "w"
	}
	// lib/session.lua's settings: "<ttl> <grain µs> <maxlen> <mode>"
	settings := fmt.Sprintf("%d %d %d %s", cfg.TTLSeconds, cfg.Grain().Microseconds(), cfg.EventsMaxLen, mode)
	return &Store{
		conn:   conn,
		cfg:    cfg,
		common: []string{settings},
	}
}

// FromDeps returns the host's one session Store: the session settings are
// parsed once (LoadConfig), and the session counters registered once, for
// every module that asks.
func FromDeps(deps sidecar.Deps) (*Store, error) {
	return sidecar.Shared(deps, "session", func(deps sidecar.Deps) (*Store, error) {
		cfg, err := LoadConfig(deps.Env)
		if err != nil {
			return nil, err
		}
		if err := registerCounters(deps.Registerer); err != nil {
			return nil, err
		}
		s := New(deps.Redis, cfg)
		s.ended = newEnded()
		if deps.Registerer != nil {
			if err := deps.Registerer.Register(s.ended); err != nil {
				return nil, err
			}
		}
		return s, nil
	})
}

// Config returns the session settings the store was built with.
func (s *Store) Config() Config { return s.cfg }

// Conn returns the Redis connection, for a module's own reads.
func (s *Store) Conn() *redisstore.Conn { return s.conn }

// Keys returns the keys of a session, in the layout of the connected Redis.
func (s *Store) Keys(user, session string) redisstore.SessionKeys {
	return s.layout().Session(user, session)
}

// layout is the key layout of the connected Redis.
func (s *Store) layout() redisstore.Layout { return redisstore.Layout{Cluster: s.conn.Cluster()} }

// Run runs a session script as Exec does and decodes its answer in the
// one reply convention (lua.Decode): the Reply of 'ok' or 'dup', else
// redisstore.ErrNotFound ('missing'), the store refusal ('refused', 409,
// nothing written) or *lua.IndexBuild. A pending abort request the
// answer carries (session.reply) becomes the Sidecar-Abort-Requested
// header.
func (s *Store) Run(ctx context.Context, script *lua.Script, user, session string, args ...string) (lua.Reply, error) {
	msg, err := s.Exec(ctx, script, user, session, args...)
	if err != nil {
		return lua.Reply{}, err
	}
	r, err := lua.Decode(script.Name, msg)
	if r.Abort > 0 {
		sidecar.SetAnswerHeader(ctx, AbortHeader, *isoTime(r.Abort))
	}
	return r, err
}

// Exec runs a session script with the core's per-call contract
// (lib/session.lua): KEYS the session's record and the user's marker,
// ARGV the core's settings followed by args; and returns its answer as it is, but for the answers
// every script shares, returned as errors: a refusal or an index to build
// (lua.Refusal), Redis's WRONGTYPE (a 409), a nil reply
// (redisstore.ErrNotFound). Run decodes the rest too.
func (s *Store) Exec(ctx context.Context, script *lua.Script, user, session string, args ...string) (rueidis.RedisMessage, error) {
	client, err := s.conn.Client()
	if err != nil {
		return rueidis.RedisMessage{}, err
	}
	argv := make([]string, 0, len(s.common)+len(args))
	argv = append(append(argv, s.common...), args...)
	l := s.layout()
	keys := []string{l.SessionKey(redisstore.RecordFamily, user, session), l.UserMarker(user)}
	msg, err := script.Exec(ctx, client, keys, argv).ToMessage()
	if rueidis.IsRedisNil(err) {
		return msg, redisstore.ErrNotFound
	}
	if err != nil {
		if ref := wrongType(err); ref != nil {
			return msg, ref
		}
		return msg, redisstore.Wrap(script.Name, err)
	}
	if err := lua.Refusal(script.Name, msg); err != nil {
		return msg, err
	}
	return msg, nil
}

// AbortField is the record field holding a pending abort request (Redis
// TIME, µs); AbortHeader the answer header that shows it on every write
// answer of the session while it is set.
const (
	AbortField  = "abort_requested_at"
	AbortHeader = "Sidecar-Abort-Requested"
)

// wrongType turns Redis's own WRONGTYPE (a read that came first met a key
// another program wrote with another type) into a 409 key_wrong_type; nil
// for any other error. The scripts' own refusals are replies (lua.Decode).
func wrongType(err error) error {
	return redisstore.AsWrongType(err,
		"a Redis key of this session holds another type of value than the sidecar keeps there (another program wrote it); nothing was changed")
}

// ExecFound runs a script that answers 'ok' (done) or 'missing' (no such
// thing: redisstore.ErrNotFound).
func (s *Store) ExecFound(ctx context.Context, script *lua.Script, user, session string, args ...string) error {
	_, err := s.Run(ctx, script, user, session, args...)
	return err
}

// Stored is what a storing script answered.
type Stored struct {
	Value   []byte // the stored value (the earlier one when not Created)
	Created bool   // written now; false: already there, nothing written
	Started bool   // this write started the session (created its record)
}

// StoredOf decodes a storing script's reply: {'ok', started} stored (started:
// 1 when this write started the session), {'dup', earlier} already there
// (nothing written). The stored value of a new write is the caller's own
// (value), not echoed back.
func StoredOf(r lua.Reply, value []byte) (Stored, error) {
	if r.Dup {
		v, err := r.String(0)
		return Stored{Value: []byte(v)}, err
	}
	started, err := r.Flag(0)
	if err != nil {
		return Stored{}, err
	}
	if started {
		CountStarted()
	}
	return Stored{Value: value, Created: true, Started: started}, nil
}

// missing turns ErrNotFound into the refusal "no session u/s".
func missing(err error, user, session string) error {
	if errors.Is(err, redisstore.ErrNotFound) {
		return redisstore.NotFound("no session %s/%s", user, session)
	}
	return err
}

// Delete removes every key of the session (404 refusal when none exists).
func (s *Store) Delete(ctx context.Context, user, session string) error {
	return missing(s.ExecFound(ctx, lua.SessionDelete, user, session), user, session)
}

// SetTTL gives the session its own TTL (0 = no expiry) on every key at
// once (404 refusal for no such session).
func (s *Store) SetTTL(ctx context.Context, user, session string, ttlSeconds int64) error {
	return missing(s.ExecFound(ctx, lua.SessionTTLSet, user, session, strconv.FormatInt(ttlSeconds, 10)), user, session)
}

// TTL returns the session's remaining TTL in seconds (-1 = no expiry), or
// ErrNotFound. It reads the record, or the entries list of a session only
// Cognee wrote.
func (s *Store) TTL(ctx context.Context, user, session string) (int64, error) {
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
			return 0, redisstore.Wrap("ttl", err)
		}
		if ttl != -2 {
			return ttl, nil
		}
	}
	return 0, redisstore.NotFound("no session %s/%s", user, session)
}
