package search

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// dropStale removes from the user's list the sessions whose hashes both
// answered nothing and do not exist (expired): one EXISTS each, then one
// ZREM, then one EXISTS each of those removed, to list again any that a
// write indexed meanwhile.
func (f *finder) dropStale(ctx context.Context) error {
	if len(f.suspect) == 0 {
		return nil
	}
	cmds := make(rueidis.Commands, len(f.suspect))
	for i, sess := range f.suspect {
		s := f.sessions[sess]
		cmds[i] = f.c.B().Exists().Key(f.l.SearchEntryDocs(f.user, s), f.l.SearchDocs(f.user, s)).Build()
	}
	var gone []string
	for i, r := range f.c.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		if err != nil {
			return redisstore.Wrap("search: sessions", err)
		}
		if n == 0 {
			gone = append(gone, f.sessions[f.suspect[i]])
		}
	}
	if len(gone) == 0 {
		return nil
	}
	if dropHook != nil {
		dropHook()
	}
	key := f.l.SearchSessions(f.user)
	if err := f.c.Do(ctx, f.c.B().Zrem().Key(key).Member(gone...).Build()).Error(); err != nil {
		return redisstore.Wrap("search: sessions", err)
	}
	// a write may have indexed one of them between the EXISTS and the
	// ZREM (its ZADD then undone): listed again, unless listed since
	for i, s := range gone {
		cmds[i] = f.c.B().Exists().Key(f.l.SearchEntryDocs(f.user, s), f.l.SearchDocs(f.user, s)).Build()
	}
	now := float64(time.Now().UnixMicro())
	var back []rueidis.Completed
	for i, r := range f.c.DoMulti(ctx, cmds[:len(gone)]...) {
		if n, err := r.AsInt64(); err != nil {
			return redisstore.Wrap("search: sessions", err)
		} else if n > 0 {
			back = append(back, f.c.B().Zadd().Key(key).Nx().ScoreMember().ScoreMember(now, gone[i]).Build())
		}
	}
	for _, r := range f.c.DoMulti(ctx, back...) {
		if err := r.Error(); err != nil {
			return redisstore.Wrap("search: sessions", err)
		}
	}
	return nil
}

// dropHook, when set (tests), runs in dropStale between its EXISTS and
// its ZREM.
var dropHook func()
