package redisstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
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

// Usage is one LLM call to add to a session.
type Usage struct {
	Model       string
	TokensIn    int64
	TokensOut   int64
	CostNanoUSD int64
	Failed      bool
	// IdempotencyKey makes a retried post count once per session ("" = none).
	IdempotencyKey string
	// Result is what the caller answers; a repeat of the key gets it back.
	Result []byte
}

// AddUsage counts u in the session record (created running if absent), its
// per-model breakdown and the all-time totals, in one script. For a repeated
// idempotency key it counts nothing and returns the first result with
// Created == false.
func (s *Sessions) AddUsage(ctx context.Context, user, session string, u Usage) (Stored, error) {
	failed := "0"
	if u.Failed {
		failed = "1"
	}
	msg, err := s.exec(ctx, lua.SessionUsage, user, session, u.Model,
		strconv.FormatInt(u.TokensIn, 10), strconv.FormatInt(u.TokensOut, 10),
		strconv.FormatInt(u.CostNanoUSD, 10), failed, u.IdempotencyKey, string(u.Result))
	if err != nil {
		return Stored{}, err
	}
	return storedPair(msg, u.Result)
}

// ErrEnded means the session already ended with the other status.
var ErrEnded = errors.New("session already ended")

// End marks the session completed or failed. It returns ended == false when
// it had already ended with that status; ErrEnded (wrapped with the status)
// when with the other; ErrNotFound for no such session.
func (s *Sessions) End(ctx context.Context, user, session, status string) (ended bool, err error) {
	msg, err := s.exec(ctx, lua.SessionEnd, user, session, status)
	if err != nil {
		return false, err
	}
	if arr, aerr := msg.ToArray(); aerr == nil && len(arr) == 2 {
		st, _ := arr[1].ToString()
		return false, fmt.Errorf("%w as %s", ErrEnded, st)
	}
	n, err := msg.AsInt64()
	if err != nil {
		return false, Wrap("session_end", err)
	}
	switch n {
	case 0:
		return false, ErrNotFound
	case 2:
		return false, nil
	}
	return true, nil
}

// Now returns Redis's clock in microseconds, the clock every record uses.
func (s *Sessions) Now(ctx context.Context) (int64, error) {
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
			return 0, Wrap("time", errors.Join(err, serr))
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
// no record) reads as running, with entry count and last activity taken
// from the list. ErrNotFound when none of its keys exists.
func (s *Sessions) Get(ctx context.Context, user, session string) (SessionState, error) {
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
	)
	for _, r := range res {
		if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
			return SessionState{}, Wrap("get session", err)
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
		return st, nil
	}
	llen, _ := res[3].AsInt64()
	others, _ := res[6].AsInt64()
	if llen == 0 && others == 0 {
		return SessionState{}, ErrNotFound
	}
	st.Record = Record{UserID: user, SessionID: session, Status: StatusRunning, EntryCount: llen, Derived: true, Models: map[string]ModelUsage{}}
	if last, err := res[4].ToString(); err == nil {
		st.LastActivityAt = entryTime(last)
	}
	st.TTLSeconds, _ = res[5].AsInt64()
	return st, nil
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

// ListQuery selects a page of sessions, most recently active first.
type ListQuery struct {
	User         string // "" = across users
	Status       string // "" = any; running, abandoned, completed, failed
	Limit        int
	Cursor       string // from the previous page's NextCursor
	AbandonAfter time.Duration
}

// ErrBadCursor means a cursor this store did not make.
var ErrBadCursor = errors.New("bad cursor")

// SweepBatch bounds the expired sessions one list or count drops from the
// indexes (split over the shards on Cluster).
const SweepBatch = 1000

// layout is the key layout of the connected Redis.
func (s *Sessions) layout() Layout { return Layout{Cluster: s.conn.Cluster()} }

// sweep drops sessions Redis expired from the index sets (bounded): one
// script per shard, pipelined; on Cluster each runs in its bucket's slot
// with the bucket's key prefixes, so the keys it derives stay in that slot.
// It returns Redis's clock (µs) as the script read it, the "now" of the
// listing or count that follows.
func (s *Sessions) sweep(ctx context.Context, client rueidis.Client) (int64, error) {
	l := s.layout()
	n := l.Buckets()
	batch := strconv.Itoa((SweepBatch + n - 1) / n)
	calls := make([]lua.Call, n)
	for b := range n {
		g := l.Global(b)
		calls[b] = lua.Call{
			Keys: []string{g.Expiry, g.Index[0], g.Index[1], g.Index[2]},
			Args: []string{batch, g.RecordPrefix, g.UserIndexPrefix},
		}
	}
	var now int64
	for _, r := range lua.SessionSweep.ExecMulti(ctx, client, calls...) {
		vals, err := r.AsIntSlice()
		if err != nil || len(vals) != 2 {
			return 0, Wrap("session_sweep", errors.Join(err, r.Error()))
		}
		now = max(now, vals[1])
	}
	return now, nil
}

// List returns one page of sessions and the cursor of the next ("" = last
// page). Cost: O(log n + page) on the status's sorted set: "running" and
// "abandoned" are the two score ranges of the running set, split at
// now - AbandonAfter. Across users on Cluster, each of the Buckets shards
// gives its first page after the cursor (one pipeline) and the pages merge:
// O(Buckets × (log n + page)).
func (s *Sessions) List(ctx context.Context, q ListQuery) ([]SessionState, string, error) {
	client, err := s.conn.Client()
	if err != nil {
		return nil, "", err
	}
	now, err := s.sweep(ctx, client)
	if err != nil {
		return nil, "", err
	}
	l := s.layout()
	var shards [][3]string
	if q.User != "" {
		shards = [][3]string{l.UserIndex(q.User)}
	} else {
		for b := range l.Buckets() {
			shards = append(shards, l.Global(b).Index)
		}
	}
	cutoff := strconv.FormatInt(now-q.AbandonAfter.Microseconds(), 10)
	var scans []scan
	for _, sets := range shards {
		switch q.Status {
		case StatusRunning:
			scans = append(scans, scan{sets[0], "+inf", cutoff})
		case StatusAbandoned:
			scans = append(scans, scan{sets[0], "(" + cutoff, "-inf"})
		case StatusCompleted:
			scans = append(scans, scan{sets[1], "+inf", "-inf"})
		case StatusFailed:
			scans = append(scans, scan{sets[2], "+inf", "-inf"})
		default: // any status: merge the three sets
			for _, k := range sets {
				scans = append(scans, scan{k, "+inf", "-inf"})
			}
		}
	}
	var after *hit
	if q.Cursor != "" {
		score, member, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		after = &hit{member, score}
	}
	hits, err := pagesAfter(ctx, client, scans, after, q.Limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(hits) > q.Limit {
		hits = hits[:q.Limit]
		last := hits[len(hits)-1]
		next = encodeCursor(last.score, last.member)
	}
	if len(hits) == 0 {
		return nil, next, nil
	}
	cmds := make(rueidis.Commands, len(hits))
	ids := make([][2]string, len(hits))
	for i, h := range hits {
		user, session := q.User, h.member
		if q.User == "" {
			user, session, _ = strings.Cut(h.member, ":")
		}
		ids[i] = [2]string{user, session}
		cmds[i] = client.B().Hgetall().Key(l.Session(user, session).Record).Build()
	}
	out := make([]SessionState, 0, len(hits))
	for i, r := range client.DoMulti(ctx, cmds...) {
		h, err := r.AsStrMap()
		if err != nil {
			return nil, "", Wrap("list sessions", err)
		}
		if len(h) == 0 {
			continue // expired since the sweep
		}
		out = append(out, SessionState{Record: parseRecord(ids[i][0], ids[i][1], h), Now: now, TTLSeconds: -2})
	}
	return out, next, nil
}

// scan is a score range [min, max] of one sorted set.
type scan struct{ key, max, min string }

// hit is one index member and its score (last activity, µs).
type hit struct {
	member string
	score  int64
}

// before orders hits as ZREVRANGEBYSCORE does: higher score first, then
// members in reverse byte order.
func (h hit) before(o hit) bool {
	if h.score != o.score {
		return h.score > o.score
	}
	return h.member > o.member
}

// pagesAfter returns the first n members, newest first, of the union of the
// scans that come after the cursor hit (nil: from the top). Every scan is
// read in the same pipeline, n (plus a few for members sharing the cursor's
// score) at a time; a scan is read again only while members equal to or
// before the cursor filled its batch.
func pagesAfter(ctx context.Context, client rueidis.Client, scans []scan, after *hit, n int) ([]hit, error) {
	type state struct {
		scan
		offset int64
		got    int
		done   bool
	}
	st := make([]state, len(scans))
	for i, sc := range scans {
		if after != nil && (sc.max == "+inf" || after.score < mustScore(sc.max)) {
			sc.max = strconv.FormatInt(after.score, 10)
		}
		st[i].scan = sc
	}
	batch := int64(n + 8)
	var out []hit
	for {
		var cmds rueidis.Commands
		var at []int
		for i := range st {
			if !st[i].done {
				cmds = append(cmds, client.B().Zrevrangebyscore().Key(st[i].key).Max(st[i].max).Min(st[i].min).Withscores().Limit(st[i].offset, batch).Build())
				at = append(at, i)
			}
		}
		if len(cmds) == 0 {
			break
		}
		for j, r := range client.DoMulti(ctx, cmds...) {
			zs, err := r.AsZScores()
			if err != nil {
				return nil, Wrap("list sessions", err)
			}
			sc := &st[at[j]]
			for _, z := range zs {
				h := hit{z.Member, int64(z.Score)}
				if after != nil && !after.before(h) {
					continue // the cursor itself, or a member sharing its score before it
				}
				if sc.got < n {
					out = append(out, h)
					sc.got++
				}
			}
			sc.offset += batch
			sc.done = sc.got >= n || int64(len(zs)) < batch
		}
	}
	if len(scans) > 1 {
		sort.Slice(out, func(i, j int) bool { return out[i].before(out[j]) })
	}
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

func mustScore(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimPrefix(s, "("), 10, 64)
	return n
}

func encodeCursor(score int64, member string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(score, 10) + ":" + member))
}

func decodeCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	sc, member, ok := strings.Cut(string(b), ":")
	score, err := strconv.ParseInt(sc, 10, 64)
	if !ok || err != nil || member == "" {
		return 0, "", ErrBadCursor
	}
	return score, member, nil
}

// Stats are operator summaries: sessions by (derived) status now, and the
// all-time usage totals.
type Stats struct {
	Running, Abandoned, Completed, Failed int64
	TokensIn, TokensOut, CostNanoUSD      int64
	Calls, Errors                         int64
}

// Stats counts sessions by status (O(log n): counts of sorted-set ranges)
// and reads the usage totals.
func (s *Sessions) Stats(ctx context.Context, abandonAfter time.Duration) (Stats, error) {
	client, err := s.conn.Client()
	if err != nil {
		return Stats{}, err
	}
	now, err := s.sweep(ctx, client)
	if err != nil {
		return Stats{}, err
	}
	l := s.layout()
	cutoff := strconv.FormatInt(now-abandonAfter.Microseconds(), 10)
	var cmds rueidis.Commands
	for b := range l.Buckets() {
		g := l.Global(b)
		cmds = append(cmds,
			client.B().Zcount().Key(g.Index[0]).Min(cutoff).Max("+inf").Build(),
			client.B().Zcount().Key(g.Index[0]).Min("-inf").Max("("+cutoff).Build(),
			client.B().Zcard().Key(g.Index[1]).Build(),
			client.B().Zcard().Key(g.Index[2]).Build(),
			client.B().Hgetall().Key(g.Totals).Build(),
		)
	}
	res := client.DoMulti(ctx, cmds...)
	var st Stats
	for i := 0; i < len(res); i += 5 {
		for j, p := range []*int64{&st.Running, &st.Abandoned, &st.Completed, &st.Failed} {
			n, err := res[i+j].AsInt64()
			if err != nil {
				return Stats{}, Wrap("session stats", err)
			}
			*p += n
		}
		h, err := res[i+4].AsStrMap()
		if err != nil {
			return Stats{}, Wrap("session stats", err)
		}
		num := func(k string) int64 { n, _ := strconv.ParseInt(h[k], 10, 64); return n }
		st.TokensIn += num("tokens_in")
		st.TokensOut += num("tokens_out")
		st.CostNanoUSD += num("cost_nano_usd")
		st.Calls += num("calls")
		st.Errors += num("errors")
	}
	return st, nil
}

// ModelTotals is one model's all-time usage.
type ModelTotals struct {
	Model                            string
	TokensIn, TokensOut, CostNanoUSD int64
	Calls, Errors                    int64
}

// CostByModel returns all-time usage per model, most expensive first.
func (s *Sessions) CostByModel(ctx context.Context) ([]ModelTotals, error) {
	client, err := s.conn.Client()
	if err != nil {
		return nil, err
	}
	l := s.layout()
	cmds := make(rueidis.Commands, l.Buckets())
	for b := range cmds {
		cmds[b] = client.B().Hgetall().Key(l.Global(b).ByModel).Build()
	}
	by := map[string]*ModelTotals{}
	for _, r := range client.DoMulti(ctx, cmds...) {
		h, err := r.AsStrMap()
		if err != nil {
			return nil, Wrap("cost by model", err)
		}
		for k, v := range h {
			model, field, ok := strings.Cut(k, "\t")
			if !ok {
				continue
			}
			m := by[model]
			if m == nil {
				m = &ModelTotals{Model: model}
				by[model] = m
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			switch field {
			case "tokens_in":
				m.TokensIn += n
			case "tokens_out":
				m.TokensOut += n
			case "cost_nano_usd":
				m.CostNanoUSD += n
			case "calls":
				m.Calls += n
			case "errors":
				m.Errors += n
			}
		}
	}
	out := make([]ModelTotals, 0, len(by))
	for _, m := range by {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CostNanoUSD != out[j].CostNanoUSD {
			return out[i].CostNanoUSD > out[j].CostNanoUSD
		}
		return out[i].Model < out[j].Model
	})
	return out, nil
}

// NanoUSD converts dollars to the integer nano-dollars the records sum.
func NanoUSD(usd float64) int64 { return int64(math.Round(usd * 1e9)) }

// USD converts nano-dollars back to dollars.
func USD(nano int64) float64 { return float64(nano) / 1e9 }
