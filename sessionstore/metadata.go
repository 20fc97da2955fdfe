package sessionstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
)

// MetaScanFactor bounds the work of a metadata-filtered page: it examines
// at most MetaScanFactor × limit candidates, so a page may hold fewer than
// limit sessions and still carry a next cursor.
const MetaScanFactor = 10

// listByMetadata is List with q.Metadata: the candidates are the members of
// one pair's index (the smallest), the user's or, across users, every
// bucket's shard merged, newest first after the cursor; each candidate's
// record is checked for the other pairs and the status. At most
// MetaScanFactor × limit candidates are examined (pipelined HMGETs), then
// the matches' records read: O(factor × limit + log n) per page. Members
// of sessions that no longer exist are dropped from the index on the way.
func (s *Store) listByMetadata(ctx context.Context, client rueidis.Client, q ListQuery, now int64) ([]SessionState, string, error) {
	l := s.layout()
	shardKeys := func(k, v string) []string {
		if q.User != "" {
			return []string{l.MetaIndex(q.User, k, v)}
		}
		out := make([]string, l.Buckets())
		for b := range out {
			out[b] = l.MetaGlobal(b, k, v)
		}
		return out
	}
	// The pair with the fewest members drives the scan.
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range q.Metadata {
			if !yield(k) {
				return
			}
		}
	})
	var cmds rueidis.Commands
	for _, k := range keys {
		for _, key := range shardKeys(k, q.Metadata[k]) {
			cmds = append(cmds, client.B().Zcard().Key(key).Build())
		}
	}
	res := client.DoMulti(ctx, cmds...)
	best, bestN := keys[0], int64(-1)
	per := len(res) / len(keys)
	for i, k := range keys {
		var n int64
		for _, r := range res[i*per : (i+1)*per] {
			c, err := r.AsInt64()
			if err != nil {
				return nil, "", redisstore.Wrap("list sessions", err)
			}
			n += c
		}
		if bestN < 0 || n < bestN {
			best, bestN = k, n
		}
	}
	if bestN == 0 {
		return nil, "", nil
	}
	shards := shardKeys(best, q.Metadata[best])
	scans := make([]scan, len(shards))
	for i, key := range shards {
		scans[i] = scan{key, "+inf", "-inf"}
	}
	var after *hit
	if q.Cursor != "" {
		score, member, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		after = &hit{member, score}
	}
	budget := MetaScanFactor * q.Limit
	cands, err := pagesAfter(ctx, client, scans, after, budget+1)
	if err != nil {
		return nil, "", err
	}
	more := len(cands) > budget
	if more {
		cands = cands[:budget]
	}
	ids := make([][2]string, len(cands))
	cmds = make(rueidis.Commands, len(cands))
	for i, h := range cands {
		user, session := q.User, h.member
		if q.User == "" {
			user, session, _ = strings.Cut(h.member, ":")
		}
		ids[i] = [2]string{user, session}
		cmds[i] = client.B().Hmget().Key(l.Session(user, session).Record).Field("status", "last_activity_at", "metadata").Build()
	}
	cutoff := now - q.AbandonAfter.Microseconds()
	var matched []int
	var gone []lua.Call
	next := ""
	for i, r := range client.DoMulti(ctx, cmds...) {
		f, err := r.ToArray()
		if err != nil || len(f) != 3 {
			return nil, "", redisstore.Wrap("list sessions", err)
		}
		status, serr := f[0].ToString()
		if serr != nil { // no record: expired or deleted
			idx := shards[0]
			if q.User == "" {
				idx = l.MetaGlobal(l.Bucket(ids[i][0]), best, q.Metadata[best])
			}
			gone = append(gone, lua.Call{Keys: []string{idx, l.Session(ids[i][0], ids[i][1]).Record}, Args: []string{cands[i].member}})
			continue
		}
		last, _ := f[1].ToString()
		meta, _ := f[2].ToString()
		if !statusMatches(q.Status, status, last, cutoff) || !metaMatches(meta, q.Metadata) {
			continue
		}
		matched = append(matched, i)
		if len(matched) == q.Limit {
			if i < len(cands)-1 || more {
				next = encodeCursor(cands[i].score, cands[i].member)
			}
			break
		}
	}
	if next == "" && more && len(cands) > 0 {
		last := cands[len(cands)-1]
		next = encodeCursor(last.score, last.member)
	}
	if len(gone) > 0 {
		for _, r := range lua.SessionMetaPrune.ExecMulti(ctx, client, gone...) {
			if err := r.Error(); err != nil {
				return nil, "", redisstore.Wrap(lua.SessionMetaPrune.Name, err)
			}
		}
	}
	if len(matched) == 0 {
		return nil, next, nil
	}
	found := make([][2]string, len(matched))
	for j, i := range matched {
		found[j] = ids[i]
	}
	out, err := readRecords(ctx, client, l, found, now)
	return out, next, err
}

// statusMatches applies a listing's status filter to a stored status and
// last activity (µs, as text); cutoff splits running from abandoned.
func statusMatches(want, status, last string, cutoff int64) bool {
	at, _ := strconv.ParseInt(last, 10, 64)
	switch want {
	case "":
		return true
	case StatusRunning:
		return status == StatusRunning && at >= cutoff
	case StatusAbandoned:
		return status == StatusRunning && at < cutoff
	}
	return status == want
}

// metaMatches reports whether the stored metadata (JSON text) holds every
// pair of want.
func metaMatches(stored string, want map[string]string) bool {
	var m map[string]string
	if json.Unmarshal([]byte(stored), &m) != nil {
		return false
	}
	for k, v := range want {
		if m[k] != v {
			return false
		}
	}
	return true
}

// Limits of metadata, shared by the registry's writes and the listings'
// filters.
const (
	MaxMetadataKeys   = 32  // keys per session
	MaxMetaKeyLength  = 64  // characters of [A-Za-z0-9_.-]
	MaxMetaValueChars = 512 // characters
)

// ValidMetaKey reports whether k is 1-64 characters of [A-Za-z0-9_.-].
func ValidMetaKey(k string) bool {
	if k == "" || len(k) > MaxMetaKeyLength {
		return false
	}
	for _, c := range []byte(k) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// MetadataQuery reads a listing's metadata.<key>=<value> parameters (nil
// for none); the error names the bad parameter.
func MetadataQuery(q url.Values) (map[string]string, error) {
	var out map[string]string
	for name, vals := range q {
		k, ok := strings.CutPrefix(name, "metadata.")
		if !ok {
			continue
		}
		if !ValidMetaKey(k) {
			return nil, fmt.Errorf("parameter %q: the key must be 1-%d characters of A-Z a-z 0-9 _ . -", name, MaxMetaKeyLength)
		}
		if len(vals) != 1 || !utf8.ValidString(vals[0]) || utf8.RuneCountInString(vals[0]) > MaxMetaValueChars {
			return nil, fmt.Errorf("parameter %q: give it once, at most %d characters", name, MaxMetaValueChars)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = vals[0]
	}
	if len(out) > MaxMetadataKeys {
		return nil, fmt.Errorf("at most %d metadata.<key> parameters", MaxMetadataKeys)
	}
	return out, nil
}
