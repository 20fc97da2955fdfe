package search

import (
	"context"
	"errors"
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

// Limits of one query (docs/operations.md). Redis's work per command is
// small whatever the user holds: an HMGET of a session's hash reads at
// most 2 + MaxQueryTerms fields, each postings value at most MaxPostings
// tokens; a record HMGET reads at most RecordBatch fields.
const (
	// MaxSearchSessions is how many of the user's sessions a user-wide
	// search reads at most, those whose documents changed last first
	// (the user's list keeps twice as many: lua/lib/search.lua MAX_LISTED).
	MaxSearchSessions = 1000
	// SessionBatch is the most sessions read in one pipeline (two HMGETs
	// each, one per kind).
	SessionBatch = 32
	// BatchBytes is the postings bytes a batch aims at: the next batch
	// takes as many sessions as the bytes per session read so far say fit
	// (from 1 to SessionBatch).
	BatchBytes = 1 << 20
	// MaxReadBytes bounds the postings bytes one search reads: past it no
	// further batch is read (the newest sessions' postings are kept).
	MaxReadBytes = 16 << 20
	// MaxCandidates bounds the documents whose records one search reads
	// (those that can score best first, then the newest).
	MaxCandidates = 4000
	// RecordBatch is the most records read in one pipeline.
	RecordBatch = 256
	// MaxRecordBytes bounds the record bytes one search reads.
	MaxRecordBytes = 8 << 20
	// MaxSnippets is how many of the best results get their texts fetched
	// for a snippet (and are dropped when their item is gone by then).
	MaxSnippets = 50
	// SnippetScanBytes is how much of a document's text (collapsed) a
	// snippet looks for its first match in; past it the snippet is the
	// text's start.
	SnippetScanBytes = 64 << 10
	// textRounds bounds the fetches that fill up for items gone.
	textRounds = 3
)

// kinds are the kinds of documents, in the order a session's hashes are
// read (a term's postings are taken newest session first, then in this
// order within a session).
var kinds = [...]string{"entry", "message"}

// doc is a candidate document: number num in the hash of kind of the
// session at position sess (newest first) of the sessions read.
type doc struct {
	sess, kind int
	num        string
	tfs        []int // per query term: its frequency in the postings (0: not found by it)
	rank       int   // order met: newest first
	bound      float64

	// from its record
	length int
	at     int64 // µs
	id     string
	score  float64
}

type docKey struct {
	sess, kind int
	num        string
}

// finder is one Find's state.
type finder struct {
	c        rueidis.Client
	l        redisstore.Layout
	user     string
	terms    []string
	sessions []string

	dfs     []int
	n, sum  int64 // documents, their total length (the hashes read)
	docs    map[docKey]*doc
	order   []*doc
	suspect []int // sessions whose hashes answered nothing (user-wide)

	pending []*doc // by bound, best first
	next    int    // of pending
	hits    []*doc // scored, best first
	records int    // record bytes read
}

// Find ranks the user's documents (of session only, when not "") for
// query q by BM25 and returns the best limit, best first (ties: newest
// first), with snippets from the registered fetchers. A user-wide search
// reads the user's sessions whose documents changed last first, at most
// MaxSearchSessions; each term takes at most MaxPostings postings in all,
// newest first. N, the average length and df come from the hashes read.
// Sessions listed whose documents have expired are dropped from the
// user's list. Its steps: the postings read (postings.go), the expired
// sessions dropped (stale.go), the candidates' records read and scored
// best bound first (records.go), the best with their snippets (results,
// snippets.go).
func (x *Index) Find(ctx context.Context, user, session, q string, limit int) ([]Result, error) {
	terms := Query(q)
	if len(terms) == 0 {
		return nil, ErrNoTerms
	}
	c, err := x.store.Conn().Client()
	if err != nil {
		return nil, err
	}
	f := &finder{c: c, l: redisstore.Layout{Cluster: x.store.Conn().Cluster()}, user: user, terms: terms,
		dfs: make([]int, len(terms)), docs: map[docKey]*doc{}}
	if session != "" {
		f.sessions = []string{session}
	} else {
		key := f.l.SearchSessions(user)
		f.sessions, err = c.Do(ctx, c.B().Zrevrange().Key(key).Start(0).Stop(MaxSearchSessions-1).Build()).AsStrSlice()
		if err != nil {
			return nil, redisstore.Wrap("search: sessions", err)
		}
	}
	if err := f.postings(ctx, session == ""); err != nil {
		return nil, err
	}
	if err := f.dropStale(ctx); err != nil {
		return nil, err
	}
	f.bounds()
	return x.results(ctx, f, limit)
}

// results takes the best limit hits, the first MaxSnippets with their
// snippets; a hit whose item is gone by then is dropped and the next best
// taken instead (at most textRounds fetches).
func (x *Index) results(ctx context.Context, f *finder, limit int) ([]Result, error) {
	out := make([]Result, 0, min(limit, 64))
	at := 0 // the next hit
	for round := 0; len(out) < limit; round++ {
		short := limit - len(out)
		snippets := len(out) < MaxSnippets && round < textRounds
		take, spare := short, 0
		if snippets {
			spare = min(4, short) // a few more, in case some are gone
			take += spare
		}
		if err := f.settle(ctx, at+take); err != nil {
			return nil, err
		}
		batch := f.hits[at:min(at+take, len(f.hits))]
		if len(batch) == 0 {
			break
		}
		at += len(batch)
		var texts map[*doc][]string
		if snippets {
			var err error
			if texts, err = x.snippetTexts(ctx, f, batch[:min(len(batch), MaxSnippets-len(out)+spare)]); err != nil {
				return nil, err
			}
		}
		for _, d := range batch {
			if len(out) == limit {
				break
			}
			r := Result{SessionID: f.sessions[d.sess], Kind: kinds[d.kind], ID: d.id,
				Score: float64(int64(d.score*10000+0.5)) / 10000, Time: time.UnixMicro(d.at).UTC().Format(time.RFC3339Nano)}
			if t, ok := texts[d]; ok {
				if t == nil {
					continue // gone
				}
				r.Snippet = Snippet(scanned(t), f.terms)
			}
			out = append(out, r)
		}
	}
	return out, nil
}
