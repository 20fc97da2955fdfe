package search

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

// Texts returns the texts each of ids (items of one kind in one session)
// was analysed from, for snippets; an id missing from the map is gone.
type Texts func(ctx context.Context, user, session string, ids []string) (map[string][]string, error)

// RegisterTexts adds a module's fetcher of kind's texts (at New, like
// Register); without one a kind's results have empty snippets.
func (x *Index) RegisterTexts(kind string, t Texts) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.texts == nil {
		x.texts = map[string]Texts{}
	}
	x.texts[kind] = t
}

func (x *Index) textsOf(kind string) Texts {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.texts[kind]
}

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
// user's list.
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

// postings reads the sessions' hashes in batches, newest first, until
// every term has MaxPostings postings, the sessions run out or
// MaxReadBytes were read.
func (f *finder) postings(ctx context.Context, userWide bool) error {
	need := make([]int, len(f.terms))
	for i := range need {
		need[i] = MaxPostings
	}
	size, read := 4, 0
	for from := 0; from < len(f.sessions) && read < MaxReadBytes; {
		var want []int // the terms still short of postings
		fields := []string{" n", " len"}
		for i, t := range f.terms {
			if need[i] > 0 {
				want = append(want, i)
				fields = append(fields, t)
			}
		}
		if len(want) == 0 {
			break
		}
		batch := f.sessions[from:min(from+size, len(f.sessions))]
		cmds := make(rueidis.Commands, 0, len(kinds)*len(batch))
		for _, s := range batch {
			for _, k := range kinds {
				cmds = append(cmds, f.c.B().Hmget().Key(f.l.SearchDocsOf(f.user, s, k)).Field(fields...).Build())
			}
		}
		res := f.c.DoMulti(ctx, cmds...)
		for i := range batch {
			sess, found := from+i, false
			for k := range kinds {
				vals, err := res[i*len(kinds)+k].ToArray()
				if err != nil {
					return redisstore.Wrap("search: postings", err)
				}
				if len(vals) != len(fields) {
					return errors.New("search: postings: HMGET answered a wrong count")
				}
				for j, v := range vals {
					s, err := v.ToString()
					if err != nil {
						continue // absent
					}
					found = true
					read += len(s)
					switch j {
					case 0:
						f.n += atoi64(s)
					case 1:
						f.sum += atoi64(s)
					default:
						t := want[j-2]
						var taken int
						f.dfs[t] += newest(s, need[t], func(num string, tf int) {
							f.posting(sess, k, num, t, tf)
							taken++
						})
						need[t] -= taken
					}
				}
			}
			if !found && userWide {
				f.suspect = append(f.suspect, sess)
			}
		}
		from += len(batch)
		size = max(1, min(SessionBatch, BatchBytes/max(1, read/from)))
	}
	return nil
}

// posting notes that term t occurs tf times in document num of the
// session's kind.
func (f *finder) posting(sess, kind int, num string, t, tf int) {
	k := docKey{sess, kind, num}
	d, ok := f.docs[k]
	if !ok {
		d = &doc{sess: sess, kind: kind, num: num, tfs: make([]int, len(f.terms)), rank: len(f.order)}
		f.docs[k] = d
		f.order = append(f.order, d)
	}
	d.tfs[t] = tf
}

// newest calls take with the last (newest) at most max postings of v
// (" <num>[:<tf>] ... "), newest first, and returns how many postings v
// holds.
func newest(v string, max int, take func(num string, tf int)) int {
	count, taken := 0, 0
	for end := len(v); end > 0; {
		if v[end-1] == ' ' {
			end--
			continue
		}
		start := strings.LastIndexByte(v[:end], ' ') + 1
		num, tf, ok := parsePosting(v[start:end])
		end = start
		if !ok {
			continue
		}
		count++
		if taken < max {
			take(num, tf)
			taken++
		}
	}
	return count
}

// parsePosting parses "<num>[:<tf>]" (decimal, num ≥ 1, tf ≥ 1).
func parsePosting(p string) (num string, tf int, ok bool) {
	num, freq, hasTF := strings.Cut(p, ":")
	if !digits(num) || strings.TrimLeft(num, "0") == "" {
		return "", 0, false
	}
	tf = 1
	if hasTF {
		n, err := strconv.Atoi(freq)
		if err != nil || n < 1 || !digits(freq) {
			return "", 0, false
		}
		tf = n
	}
	return num, tf, true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func atoi64(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

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

// bounds gives each candidate its best possible score (a document of
// length 0) and orders them by it, ties newest first, keeping at most
// MaxCandidates.
func (f *finder) bounds() {
	f.n = max(f.n, int64(slices.Max(f.dfs)))
	for _, d := range f.order {
		d.bound = Score(d.tfs, f.dfs, int(f.n), 0, f.avg())
	}
	f.pending = slices.Clone(f.order)
	slices.SortStableFunc(f.pending, func(a, b *doc) int { return cmp.Compare(b.bound, a.bound) })
	f.pending = f.pending[:min(len(f.pending), MaxCandidates)]
}

func (f *finder) avg() float64 {
	if f.n <= 0 || f.sum <= 0 {
		return 1
	}
	return float64(f.sum) / float64(f.n)
}

// settle reads records until the best k hits are known: until a
// candidate's bound is below the k-th best score (or the candidates, or
// MaxRecordBytes, run out).
func (f *finder) settle(ctx context.Context, k int) error {
	for f.next < len(f.pending) && f.records < MaxRecordBytes {
		if len(f.hits) >= k && f.pending[f.next].bound < f.hits[k-1].score {
			return nil
		}
		chunk := f.pending[f.next:min(f.next+RecordBatch, len(f.pending))]
		f.next += len(chunk)
		if err := f.read(ctx, chunk); err != nil {
			return err
		}
		slices.SortFunc(f.hits, better)
	}
	return nil
}

// better orders hits by score, then time, newest first.
func better(a, b *doc) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	if c := cmp.Compare(b.at, a.at); c != 0 {
		return c
	}
	return cmp.Compare(a.rank, b.rank)
}

// read fetches the records of docs (one HMGET per hash) and scores those
// that still hold every term they were found by.
func (f *finder) read(ctx context.Context, docs []*doc) error {
	type hash struct{ sess, kind int }
	byHash := map[hash][]*doc{}
	var hashes []hash
	for _, d := range docs {
		h := hash{d.sess, d.kind}
		if _, ok := byHash[h]; !ok {
			hashes = append(hashes, h)
		}
		byHash[h] = append(byHash[h], d)
	}
	cmds := make(rueidis.Commands, len(hashes))
	for i, h := range hashes {
		fields := make([]string, len(byHash[h]))
		for j, d := range byHash[h] {
			fields[j] = "#" + d.num
		}
		cmds[i] = f.c.B().Hmget().Key(f.l.SearchDocsOf(f.user, f.sessions[h.sess], kinds[h.kind])).Field(fields...).Build()
	}
	for i, r := range f.c.DoMulti(ctx, cmds...) {
		vals, err := r.ToArray()
		if err != nil {
			return redisstore.Wrap("search: documents", err)
		}
		ds := byHash[hashes[i]]
		if len(vals) != len(ds) {
			return errors.New("search: documents: HMGET answered a wrong count")
		}
		for j, v := range vals {
			s, err := v.ToString()
			if err != nil {
				continue // gone since its postings were read
			}
			f.records += len(s)
			if d := ds[j]; f.record(d, s) {
				d.score = Score(d.tfs, f.dfs, int(f.n), d.length, f.avg())
				f.hits = append(f.hits, d)
			}
		}
	}
	return nil
}

// record fills d from its record "<length>\t<time>\t<terms>\t<id>":
// false when it is not one, or does not hold every term d was found by
// (its hash was made anew between the reads).
func (f *finder) record(d *doc, rec string) bool {
	p := strings.SplitN(rec, "\t", 4)
	if len(p) != 4 {
		return false
	}
	length, err1 := strconv.Atoi(p[0])
	at, err2 := strconv.ParseInt(p[1], 10, 64)
	if err1 != nil || err2 != nil || length < 0 {
		return false
	}
	terms := " " + p[2] + " "
	for i, t := range f.terms {
		if d.tfs[i] > 0 && !strings.Contains(terms, " "+t+" ") {
			return false
		}
	}
	d.length, d.at, d.id = length, at, p[3]
	return true
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

// scanned is texts collapsed (Collapse), at most SnippetScanBytes of it,
// cut at a character's start.
func scanned(texts []string) string {
	var b strings.Builder
	for _, t := range texts {
		if b.Len() > 2*SnippetScanBytes {
			break
		}
		b.WriteString(cut(t, 2*SnippetScanBytes))
		b.WriteByte(' ')
	}
	return cut(Collapse(b.String()), SnippetScanBytes)
}

// cut is s's first n bytes at most, cut at a character's start.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// texts fetches the texts of docs from their kinds' fetchers, one call per
// session and kind: a doc missing from the answer has no fetcher; one
// mapped to nil is gone.
func (x *Index) snippetTexts(ctx context.Context, f *finder, docs []*doc) (map[*doc][]string, error) {
	type group struct{ sess, kind int }
	byGroup := map[group][]*doc{}
	var groups []group
	for _, d := range docs {
		g := group{d.sess, d.kind}
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], d)
	}
	out := make(map[*doc][]string, len(docs))
	for _, g := range groups {
		fetch := x.textsOf(kinds[g.kind])
		if fetch == nil {
			continue
		}
		ds := byGroup[g]
		ids := make([]string, len(ds))
		for i, d := range ds {
			ids[i] = d.id
		}
		got, err := fetch(ctx, f.user, f.sessions[g.sess], ids)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			t, ok := got[d.id]
			if ok && t == nil {
				t = []string{}
			}
			out[d] = t
		}
	}
	return out, nil
}
