package search

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

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
