package sessionstore

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/redis/rueidis"
)

// ListQuery selects a page of sessions, most recently active first.
type ListQuery struct {
	User         string // "" = across users
	Status       string // "" = any; running, abandoned, completed, failed
	Limit        int
	Cursor       string // from the previous page's NextCursor
	AbandonAfter time.Duration
	// Metadata keeps the sessions whose metadata holds every pair (served
	// from the metadata indexes: see listByMetadata).
	Metadata map[string]string
}

// SweepBatch bounds the expired sessions one list or count drops from the
// indexes (split over the shards on Cluster).
const SweepBatch = 1000

// sweep drops sessions Redis expired from the index sets (bounded): one
// script per shard, pipelined; on Cluster each runs in its bucket's slot
// with the bucket's key prefixes, so the keys it derives stay in that slot.
// It returns Redis's clock (µs) as the script read it, the "now" of the
// listing or count that follows.
func (s *Store) sweep(ctx context.Context, client rueidis.Client) (int64, error) {
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
			return 0, redisstore.Wrap("session_sweep", errors.Join(err, r.Error()))
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
func (s *Store) List(ctx context.Context, q ListQuery) ([]SessionState, string, error) {
	after, err := cursorHit(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	client, err := s.conn.Client()
	if err != nil {
		return nil, "", err
	}
	now, err := s.sweep(ctx, client)
	if err != nil {
		return nil, "", err
	}
	if len(q.Metadata) > 0 {
		return s.listByMetadata(ctx, client, q, after, now)
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
	hits, err := pagesAfter(ctx, client, scans, after, q.Limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(hits) > q.Limit {
		hits = hits[:q.Limit]
		next = hits[len(hits)-1].cursor()
	}
	if len(hits) == 0 {
		return nil, next, nil
	}
	ids := make([][2]string, len(hits))
	for i, h := range hits {
		ids[i] = memberIDs(q.User, h.member)
	}
	out, err := readRecords(ctx, client, l, ids, now)
	return out, next, err
}

// readRecords reads the records of the sessions ids ({user, session}),
// pipelined, skipping those that expired since they were listed. The entry
// count is the entries list's length, read beside it: Cognee's own writes
// change the list, not the record.
func readRecords(ctx context.Context, client rueidis.Client, l redisstore.Layout, ids [][2]string, now int64) ([]SessionState, error) {
	cmds := make(rueidis.Commands, 0, 2*len(ids))
	for _, id := range ids {
		k := l.Session(id[0], id[1])
		cmds = append(cmds, client.B().Hgetall().Key(k.Record).Build(), client.B().Llen().Key(k.Entries).Build())
	}
	res := client.DoMulti(ctx, cmds...)
	out := make([]SessionState, 0, len(ids))
	for i, id := range ids {
		h, err := res[2*i].AsStrMap()
		if err != nil {
			return nil, redisstore.Wrap("list sessions", err)
		}
		n, err := res[2*i+1].AsInt64()
		if err != nil {
			return nil, redisstore.Wrap("list sessions", err)
		}
		if len(h) == 0 {
			continue // expired since
		}
		st := SessionState{Record: parseRecord(id[0], id[1], h), Now: now, TTLSeconds: -2}
		st.EntryCount = n
		out = append(out, st)
	}
	return out, nil
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
				return nil, redisstore.Wrap("list sessions", err)
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

// cursor is the listing's cursor after h (sidecar.EncodeCursor): its
// score and member.
func (h hit) cursor() string {
	return sidecar.EncodeCursor(strconv.FormatInt(h.score, 10), h.member)
}

// cursorHit is the hit a listing's cursor names (nil for none), or the
// 400 invalid_cursor.
func cursorHit(c string) (*hit, error) {
	if c == "" {
		return nil, nil
	}
	f, err := sidecar.DecodeCursor(c, 2)
	if err != nil {
		return nil, err
	}
	score, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || f[1] == "" {
		return nil, sidecar.NotACursor()
	}
	return &hit{f[1], score}, nil
}

// memberIDs is the user and session an index member names: the session
// in a user's index, "<user>:<session>" across users.
func memberIDs(user, member string) [2]string {
	if user != "" {
		return [2]string{user, member}
	}
	u, s, _ := strings.Cut(member, ":")
	return [2]string{u, s}
}
