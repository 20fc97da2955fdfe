package sessionstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/redis/rueidis"
)

// Stored statuses, and the one derived at read time.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusAbandoned = "abandoned"
)

// ModelUsage is one model's share of a session's usage.
type ModelUsage struct {
	TokensIn    int64
	TokensOut   int64
	CostNanoUSD int64
}

// Record is a session's lifecycle and usage record. Times are Redis server
// time in microseconds since the epoch; 0 means not set.
type Record struct {
	UserID, SessionID string
	Status            string // as stored: running, completed, failed
	StartedAt         int64
	LastActivityAt    int64
	EndedAt           int64
	TokensIn          int64
	TokensOut         int64
	CostNanoUSD       int64
	Calls             int64
	ErrorCount        int64
	LastModel         string
	EntryCount        int64
	Models            map[string]ModelUsage
	// Derived is true for a session only Cognee wrote (a list, no record):
	// its activity and entry count come from the list.
	Derived bool
}

// EffectiveStatus derives "abandoned": stored running, idle longer than
// abandonAfter at Redis time now (µs). It is never stored.
func (r Record) EffectiveStatus(now int64, abandonAfter time.Duration) string {
	if r.Status == StatusRunning && r.LastActivityAt > 0 && r.LastActivityAt < now-abandonAfter.Microseconds() {
		return StatusAbandoned
	}
	return r.Status
}

func parseRecord(user, session string, h map[string]string) Record {
	r := Record{UserID: user, SessionID: session, Status: h["status"], LastModel: h["last_model"], Models: map[string]ModelUsage{}}
	num := func(k string) int64 { n, _ := strconv.ParseInt(h[k], 10, 64); return n }
	r.StartedAt, r.LastActivityAt, r.EndedAt = num("started_at"), num("last_activity_at"), num("ended_at")
	r.TokensIn, r.TokensOut, r.CostNanoUSD = num("tokens_in"), num("tokens_out"), num("cost_nano_usd")
	r.Calls, r.ErrorCount, r.EntryCount = num("calls"), num("error_count"), num("entry_count")
	for k, v := range h {
		rest, ok := strings.CutPrefix(k, "model:")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			continue
		}
		model, field := rest[:i], rest[i+1:]
		n, _ := strconv.ParseInt(v, 10, 64)
		mu := r.Models[model]
		switch field {
		case "tokens_in":
			mu.TokensIn = n
		case "tokens_out":
			mu.TokensOut = n
		case "cost_nano_usd":
			mu.CostNanoUSD = n
		}
		r.Models[model] = mu
	}
	return r
}

// Now returns Redis's clock in microseconds, the clock every record uses.
func (s *Store) Now(ctx context.Context) (int64, error) {
	client, err := s.conn.Client()
	if err != nil {
		return 0, err
	}
	return redisTime(client.Do(ctx, client.B().Time().Build()))
}

func redisTime(res rueidis.RedisResult) (int64, error) {
	t, err := res.AsIntSlice()
	if err != nil || len(t) != 2 {
		vals, serr := res.AsStrSlice()
		if serr != nil || len(vals) != 2 {
			return 0, redisstore.Wrap("time", errors.Join(err, serr))
		}
		t = make([]int64, 2)
		t[0], _ = strconv.ParseInt(vals[0], 10, 64)
		t[1], _ = strconv.ParseInt(vals[1], 10, 64)
	}
	return t[0]*1_000_000 + t[1], nil
}

// SessionState is a record as read, with Redis's clock and the TTL.
type SessionState struct {
	Record
	Now        int64 // Redis time (µs) of the read
	TTLSeconds int64 // -1 = no expiry
}

// Get reads a session's record. A session only Cognee wrote (its list but
// no record) reads as running, with entry count, start and last activity
// taken from the list (its first and last entries' times). ErrNotFound when none of its keys exists.
func (s *Store) Get(ctx context.Context, user, session string) (SessionState, error) {
	client, err := s.conn.Client()
	if err != nil {
		return SessionState{}, err
	}
	k := s.Keys(user, session)
	res := client.DoMulti(ctx,
		client.B().Time().Build(),
		client.B().Hgetall().Key(k.Record).Build(),
		client.B().Ttl().Key(k.Record).Build(),
		client.B().Llen().Key(k.Entries).Build(),
		client.B().Lindex().Key(k.Entries).Index(-1).Build(),
		client.B().Ttl().Key(k.Entries).Build(),
		client.B().Exists().Key(k.Traces, k.Context).Build(),
		client.B().Lindex().Key(k.Entries).Index(0).Build(),
	)
	for _, r := range res {
		if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
			return SessionState{}, redisstore.Wrap("get session", err)
		}
	}
	now, err := redisTime(res[0])
	if err != nil {
		return SessionState{}, err
	}
	h, _ := res[1].AsStrMap()
	st := SessionState{Now: now}
	if len(h) > 0 {
		st.Record = parseRecord(user, session, h)
		st.TTLSeconds, _ = res[2].AsInt64()
		if st.StartedAt == 0 { // a record made before started_at was kept for Cognee's sessions
			st.StartedAt = firstEntryTime(res[7])
		}
		return st, nil
	}
	llen, _ := res[3].AsInt64()
	others, _ := res[6].AsInt64()
	if llen == 0 && others == 0 {
		return SessionState{}, redisstore.NotFound("no session %s/%s", user, session)
	}
	st.Record = Record{UserID: user, SessionID: session, Status: StatusRunning, EntryCount: llen, Derived: true, Models: map[string]ModelUsage{}}
	if last, err := res[4].ToString(); err == nil {
		st.LastActivityAt = entryTime(last)
	}
	st.StartedAt = firstEntryTime(res[7])
	st.TTLSeconds, _ = res[5].AsInt64()
	return st, nil
}

// firstEntryTime is the time of the session's first entry (LINDEX 0), or 0.
func firstEntryTime(res rueidis.RedisResult) int64 {
	first, err := res.ToString()
	if err != nil {
		return 0
	}
	return entryTime(first)
}

// entryTime reads the "time" of a stored entry (µs), or 0.
func entryTime(entry string) int64 {
	_, rest, ok := strings.Cut(entry, `"time"`)
	if !ok {
		return 0
	}
	_, rest, ok = strings.Cut(rest, `"`)
	if !ok {
		return 0
	}
	v, _, _ := strings.Cut(rest, `"`)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UnixMicro()
		}
	}
	return 0
}
