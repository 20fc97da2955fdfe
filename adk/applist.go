package adk

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// An app's sessions across users (listSessions without a userId) are read
// from its index, one shard per bucket (AppIndexFamily): the shards' heads
// are merged in the order asked, each read a chunk at a time by rank, so a
// page costs O(offset + page + Buckets × chunk) members read, every command
// at most AppChunk of them, and the next page (next_cursor: each shard's
// rank) continues where it stopped. Members of sessions gone are skipped,
// taken out (adk_unlist.lua) and not counted.
const (
	AppChunk = 1000 // members one command reads from one shard
	AppPage  = 1000 // sessions of one answer; next_cursor continues
)

// appPage is AppPage (a test makes it smaller).
var appPage = AppPage

// appCursor is where a listing across users goes on: each shard's rank, how
// many sessions are still asked (-1: all), and the first page's figures.
type appCursor struct {
	order                     string
	remaining                 int
	page, limit, total, pages int
	ranks                     []int64
}

func (c appCursor) encode() string {
	ranks := make([]string, len(c.ranks))
	for i, r := range c.ranks {
		ranks[i] = strconv.FormatInt(r, 10)
	}
	return sidecar.EncodeCursor(c.order, strconv.Itoa(c.remaining), strconv.Itoa(c.page), strconv.Itoa(c.limit),
		strconv.Itoa(c.total), strconv.Itoa(c.pages), strings.Join(ranks, ","))
}

// decodeAppCursor reads a cursor of a layout with shards buckets.
func decodeAppCursor(s string, shards int) (appCursor, bool) {
	parts, err := sidecar.DecodeCursor(s, 7)
	if err != nil {
		return appCursor{}, false
	}
	c := appCursor{order: parts[0]}
	if c.order != OrderCreated && c.order != OrderAsc && c.order != OrderDesc {
		return c, false
	}
	for i, p := range []*int{&c.remaining, &c.page, &c.limit, &c.total, &c.pages} {
		n, err := strconv.Atoi(parts[i+1])
		if err != nil || n < -1 || (n < 0 && i > 0) {
			return c, false
		}
		*p = n
	}
	ranks := strings.Split(parts[6], ",")
	if len(ranks) != shards || c.remaining == 0 {
		return c, false
	}
	for _, r := range ranks {
		n, err := strconv.ParseInt(r, 10, 64)
		if err != nil || n < 0 {
			return c, false
		}
		c.ranks = append(c.ranks, n)
	}
	return c, true
}

// AppListed is one session of a listing across users.
type AppListed struct {
	User, ID, LastUpdate string
}

// appMerge reads the shards of one order of an app's index, merged.
type appMerge struct {
	client rueidis.Client
	keys   []string
	ranks  []int64 // each shard's rank of its next member not yet taken
	bufs   [][]rueidis.ZScore
	done   []bool // the shard has nothing past its buffer
	chunk  int64
}

// fill reads the next chunk of each shard whose buffer is empty.
func (m *appMerge) fill(ctx context.Context) error {
	var cmds rueidis.Commands
	var at []int
	for b := range m.keys {
		if len(m.bufs[b]) == 0 && !m.done[b] {
			start := m.ranks[b]
			cmds = append(cmds, m.client.B().Zrange().Key(m.keys[b]).Min(strconv.FormatInt(start, 10)).
				Max(strconv.FormatInt(start+m.chunk-1, 10)).Withscores().Build())
			at = append(at, b)
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	for i, r := range m.client.DoMulti(ctx, cmds...) {
		zs, err := r.AsZScores()
		if err != nil {
			return redisstore.Wrap("adk list", err)
		}
		b := at[i]
		m.bufs[b] = zs
		m.done[b] = int64(len(zs)) < m.chunk
	}
	return nil
}

// next takes the first member of the merge (false: none left).
func (m *appMerge) next(ctx context.Context) (member string, shard int, ok bool, err error) {
	if err := m.fill(ctx); err != nil {
		return "", 0, false, err
	}
	best := -1
	for b, buf := range m.bufs {
		if len(buf) == 0 {
			continue
		}
		if best < 0 || buf[0].Score < m.bufs[best][0].Score ||
			(buf[0].Score == m.bufs[best][0].Score && buf[0].Member < m.bufs[best][0].Member) {
			best = b
		}
	}
	if best < 0 {
		return "", 0, false, nil
	}
	z := m.bufs[best][0]
	m.bufs[best] = m.bufs[best][1:]
	m.ranks[best]++
	return z.Member, best, true, nil
}

// unread puts back the last member taken from shard: it is read again.
func (m *appMerge) unread(shard int) {
	m.ranks[shard]--
	m.bufs[shard], m.done[shard] = nil, false
}

// listedSize bounds a listed session's bytes in the answer.
func listedSize(app string, l AppListed) int {
	return 96 + 2*len(l.ID) + 2*len(app) + len(l.User) + len(l.LastUpdate) + 44
}

// more reports whether the merge holds another member.
func (m *appMerge) more(ctx context.Context) (bool, error) {
	if err := m.fill(ctx); err != nil {
		return false, err
	}
	for _, buf := range m.bufs {
		if len(buf) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// AppTotal counts the members of the app's index (every shard's): the
// app's sessions, and those gone that no listing or create met yet.
func (s *Store) AppTotal(ctx context.Context, app string) (int, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return 0, err
	}
	l := s.layout()
	cmds := make(rueidis.Commands, l.Buckets())
	for b := range cmds {
		cmds[b] = client.B().Zcard().Key(l.BucketKey(AppIndexFamily, b, app+":"+OrderCreated)).Build()
	}
	total := 0
	for _, r := range client.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		if err != nil {
			return 0, redisstore.Wrap("adk list", err)
		}
		total += int(n)
	}
	return total, nil
}

// ListApp reads a page of app's sessions across users in order (one of
// the Order constants) from ranks (nil: from the start, skipping offset),
// at most want of them (-1: up to AppPage) and SIDECAR_MAX_ANSWER_BYTES of
// answer (one at least); it answers them, each shard's rank after them
// (nil when none is left) and how many of the sessions it met were gone
// (taken out of the index).
func (s *Store) ListApp(ctx context.Context, app, order string, ranks []int64, offset, want int) ([]AppListed, []int64, int, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return nil, nil, 0, err
	}
	maxBytes, done, err := sidecar.ReserveAnswer(ctx, s.maxAnswer)
	if err != nil {
		return nil, nil, 0, err
	}
	if want < 0 || want > appPage {
		want = appPage
	}
	m, err := s.appMerge(ctx, client, app, order, ranks, offset, want)
	if err != nil {
		done(0)
		return nil, nil, 0, err
	}
	pg := &appPageRead{s: s, m: m, app: app, maxBytes: maxBytes, size: 1024} // the answer's other fields and its cursor
	defer func() { done(pg.size) }()
	for len(pg.out) < want && !pg.full {
		cands, err := m.take(ctx, want-len(pg.out))
		if err != nil || len(cands) == 0 {
			if err != nil {
				return nil, nil, 0, err
			}
			break
		}
		if err := pg.read(ctx, cands); err != nil {
			return nil, nil, 0, err
		}
	}
	more, err := m.more(ctx)
	if err != nil || !more {
		return pg.out, nil, pg.gone, err
	}
	return pg.out, m.ranks, pg.gone, nil
}

// appMerge is the merge of app's index shards in order, from ranks (nil:
// from the start, skipping offset), reading chunks for want sessions.
func (s *Store) appMerge(ctx context.Context, client rueidis.Client, app, order string, ranks []int64, offset, want int) (*appMerge, error) {
	l := s.layout()
	n := l.Buckets()
	m := &appMerge{client: client, keys: make([]string, n), ranks: make([]int64, n),
		bufs: make([][]rueidis.ZScore, n), done: make([]bool, n),
		chunk: int64(min(max(offset+want, 16), AppChunk))}
	for b := range n {
		m.keys[b] = l.BucketKey(AppIndexFamily, b, app+":"+order)
	}
	switch {
	case ranks != nil:
		copy(m.ranks, ranks)
	case n == 1:
		m.ranks[0] = int64(offset) // one shard: its rank is the offset
	default:
		for range offset {
			if _, _, ok, err := m.next(ctx); err != nil || !ok {
				return m, err
			}
		}
	}
	return m, nil
}

// appCand is a member of the app's index taken from the merge: the
// session's user and ADK id, and the shard it came from.
type appCand struct {
	user, id string
	shard    int
}

// take takes up to k members from the merge (fewer when it runs out).
func (m *appMerge) take(ctx context.Context, k int) ([]appCand, error) {
	var cands []appCand
	for len(cands) < k {
		member, shard, ok, err := m.next(ctx)
		if err != nil || !ok {
			return cands, err
		}
		id, user, _ := strings.Cut(member, " ")
		cands = append(cands, appCand{user, id, shard})
	}
	return cands, nil
}

// appPageRead is a page of an app listing as it is read: the sessions
// answered, the answer's bytes so far, whether they reached maxBytes, and
// the sessions found gone.
type appPageRead struct {
	s        *Store
	m        *appMerge
	app      string
	maxBytes int
	size     int
	full     bool
	gone     int
	out      []AppListed
}

// read reads the records of cands in one round trip and answers those
// still sessions of the app, within the answer's bytes (the rest go back
// to the merge); a member whose session is gone is taken out of the index.
func (pg *appPageRead) read(ctx context.Context, cands []appCand) error {
	l := pg.s.layout()
	client := pg.m.client
	cmds := make(rueidis.Commands, len(cands))
	for i, c := range cands {
		cmds[i] = client.B().Hmget().Key(l.SessionKey(SessionFamily, c.user, SidecarSession(pg.app, c.id))).Field("app", "last_update").Build()
	}
	for i, r := range client.DoMulti(ctx, cmds...) {
		c := cands[i]
		if pg.full { // past the answer's bytes: read again by the next page
			pg.m.unread(c.shard)
			continue
		}
		v, err := r.ToArray()
		if err != nil || len(v) != 2 {
			return redisstore.Wrap("adk list", err)
		}
		had, _ := v[0].ToString()
		last, _ := v[1].ToString()
		if had == pg.app {
			listed := AppListed{User: c.user, ID: c.id, LastUpdate: last}
			if n := listedSize(pg.app, listed); len(pg.out) > 0 && pg.size+n > pg.maxBytes {
				pg.full = true
				pg.m.unread(c.shard)
			} else {
				pg.size += n
				pg.out = append(pg.out, listed)
			}
			continue
		}
		took, err := pg.s.unlist(ctx, pg.app, c.user, c.id)
		if err != nil {
			return err
		}
		if took {
			pg.gone++
			pg.m.ranks[c.shard]-- // the members after it moved up one rank
		}
	}
	return nil
}
