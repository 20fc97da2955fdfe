package search

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// Result is one document found.
type Result struct {
	SessionID string  `json:"session_id,omitempty"`
	Kind      string  `json:"kind"`
	ID        string  `json:"id"`
	Snippet   string  `json:"snippet"`
	Score     float64 `json:"score"`
	Time      string  `json:"time"`
}

// ErrNoTerms: the query holds no word that is indexed.
var ErrNoTerms = errors.New("search: the query holds no searchable word")

type candidate struct {
	session, kind, id, ver string
	at                     int64 // the posting's score: when that version was indexed (µs)
	tfs                    []int
	length                 int
}

// Find ranks the user's documents (of session only, when not "") for
// query q by BM25 and returns the best limit, best first (ties: newest
// first). Each term reads at most MaxPostings postings, newest first;
// postings whose document changed or went are dropped from the index as
// they are met. Work: O(terms × MaxPostings) Redis reads, pipelined.
func Find(ctx context.Context, c rueidis.Client, l redisstore.Layout, user, session, q string, limit int) ([]Result, error) {
	terms := Query(q)
	if len(terms) == 0 {
		return nil, ErrNoTerms
	}
	cmds := make(rueidis.Commands, 0, 2*len(terms)+1)
	for _, t := range terms {
		key := l.SearchPostings(user, t)
		cmds = append(cmds, c.B().Zrevrange().Key(key).Start(0).Stop(MaxPostings-1).Withscores().Build(),
			c.B().Zcard().Key(key).Build())
	}
	cmds = append(cmds, c.B().Hmget().Key(l.SearchStats(user)).Field("n", "len").Build())
	res := c.DoMulti(ctx, cmds...)
	for _, r := range res {
		if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
			return nil, redisstore.Wrap("search", err)
		}
	}
	dfs := make([]int, len(terms))
	byDoc := map[string]*candidate{}
	var order []string
	stale := map[string][]string{} // postings key -> members to drop
	for i, t := range terms {
		zs, _ := res[2*i].AsZScores()
		df, _ := res[2*i+1].AsInt64()
		dfs[i] = int(df)
		for _, z := range zs {
			f := strings.Split(z.Member, "\t")
			if len(f) != 6 {
				stale[l.SearchPostings(user, t)] = append(stale[l.SearchPostings(user, t)], z.Member)
				continue
			}
			if session != "" && f[0] != session {
				continue
			}
			// A document's versions start again when its session's
			// documents are cleared or the session is made anew, so a
			// version is its document's only at the time it was indexed.
			at := int64(z.Score)
			doc := f[0] + "\t" + f[1] + "\t" + f[2] + "\t" + f[3] + "\t" + strconv.FormatInt(at, 10)
			cd, ok := byDoc[doc]
			if !ok {
				length, _ := strconv.Atoi(f[5])
				cd = &candidate{session: f[0], kind: f[1], id: f[2], ver: f[3], at: at, tfs: make([]int, len(terms)), length: length}
				byDoc[doc] = cd
				order = append(order, doc)
			}
			cd.tfs[i], _ = strconv.Atoi(f[4])
		}
	}
	stats, _ := res[len(res)-1].ToArray()
	var n, total int
	if len(stats) == 2 {
		if v, err := stats[0].ToString(); err == nil {
			n, _ = strconv.Atoi(v)
		}
		if v, err := stats[1].ToString(); err == nil {
			total, _ = strconv.Atoi(v)
		}
	}
	for _, df := range dfs {
		n = max(n, df)
	}
	avg := 1.0
	if n > 0 && total > 0 {
		avg = float64(total) / float64(n)
	}

	// The documents as they are now: a posting counts only when its
	// version is its document's. A session keeps its documents of each
	// kind (entry, message) in a hash of their own.
	type docsKey struct{ session, kind string }
	byHash := map[docsKey][]string{}
	for _, doc := range order {
		cd := byDoc[doc]
		k := docsKey{cd.session, cd.kind}
		byHash[k] = append(byHash[k], doc)
	}
	hashes := make([]docsKey, 0, len(byHash))
	gets := make(rueidis.Commands, 0, len(byHash))
	for k, docs := range byHash {
		fields := make([]string, len(docs))
		for i, doc := range docs {
			cd := byDoc[doc]
			fields[i] = cd.kind + "\t" + cd.id
		}
		hashes = append(hashes, k)
		gets = append(gets, c.B().Hmget().Key(l.SearchDocsOf(user, k.session, k.kind)).Field(fields...).Build())
	}
	type found struct {
		r  Result
		at int64
	}
	var hits []found
	for i, r := range c.DoMulti(ctx, gets...) {
		vals, err := r.ToArray()
		if err != nil {
			return nil, redisstore.Wrap("search", err)
		}
		for j, doc := range byHash[hashes[i]] {
			cd := byDoc[doc]
			v, err := vals[j].ToString()
			// "ver \t length \t time \t digest \t spec \t preview", or,
			// written by an older sidecar, without the spec or the digest
			// (neither a spec nor a preview holds a tab: whitespace is
			// collapsed)
			parts := strings.SplitN(v, "\t", 6)
			if err != nil || len(parts) < 4 || parts[0] != cd.ver || parts[2] != strconv.FormatInt(cd.at, 10) {
				for k, t := range terms {
					if cd.tfs[k] > 0 {
						key := l.SearchPostings(user, t)
						stale[key] = append(stale[key], strings.Join([]string{cd.session, cd.kind, cd.id, cd.ver, strconv.Itoa(cd.tfs[k]), strconv.Itoa(cd.length)}, "\t"))
					}
				}
				continue
			}
			hits = append(hits, found{Result{SessionID: cd.session, Kind: cd.kind, ID: cd.id,
				Snippet: Snippet(parts[len(parts)-1], terms), Score: Score(cd.tfs, dfs, n, cd.length, avg),
				Time: time.UnixMicro(cd.at).UTC().Format(time.RFC3339Nano)}, cd.at})
		}
	}
	if len(stale) > 0 {
		drops := make(rueidis.Commands, 0, len(stale))
		for key, members := range stale {
			drops = append(drops, c.B().Zrem().Key(key).Member(members...).Build())
		}
		for _, r := range c.DoMulti(ctx, drops...) {
			if err := r.Error(); err != nil {
				return nil, redisstore.Wrap("search", err)
			}
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].r.Score != hits[j].r.Score {
			return hits[i].r.Score > hits[j].r.Score
		}
		return hits[i].at > hits[j].at
	})
	out := make([]Result, 0, min(limit, len(hits)))
	for i := 0; i < len(hits) && i < limit; i++ {
		r := hits[i].r
		r.Score = float64(int64(r.Score*10000+0.5)) / 10000
		out = append(out, r)
	}
	return out, nil
}
