package search

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

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
	hashes := byHash(docs)
	cmds := make(rueidis.Commands, len(hashes))
	for i, ds := range hashes {
		fields := make([]string, len(ds))
		for j, d := range ds {
			fields[j] = "#" + d.num
		}
		cmds[i] = f.c.B().Hmget().Key(f.l.SearchDocsOf(f.user, f.sessions[ds[0].sess], kinds[ds[0].kind])).Field(fields...).Build()
	}
	for i, r := range f.c.DoMulti(ctx, cmds...) {
		vals, err := r.ToArray()
		if err != nil {
			return redisstore.Wrap("search: documents", err)
		}
		ds := hashes[i]
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

// byHash groups docs by the hash that holds them (their session's of
// their kind), in the order first met.
func byHash(docs []*doc) [][]*doc {
	at := map[[2]int]int{}
	var out [][]*doc
	for _, d := range docs {
		k := [2]int{d.sess, d.kind}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], d)
	}
	return out
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
