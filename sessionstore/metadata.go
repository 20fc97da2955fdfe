package sessionstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
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
func (s *Store) listByMetadata(ctx context.Context, client rueidis.Client, q ListQuery, after *hit, now int64) ([]SessionState, string, error) {
	ml := metaListing{l: s.layout(), q: q}
	var err error
	if ml.pair, ml.shards, err = ml.smallestIndex(ctx, client); err != nil || ml.shards == nil {
		return nil, "", err
	}
	scans := make([]scan, len(ml.shards))
	for i, key := range ml.shards {
		scans[i] = scan{key, "+inf", "-inf"}
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
	found, next, gone, err := ml.filter(ctx, client, cands, more, now)
	if err != nil {
		return nil, "", err
	}
	if err := pruneGone(ctx, client, gone); err != nil {
		return nil, "", err
	}
	if len(found) == 0 {
		return nil, next, nil
	}
	out, err := readRecords(ctx, client, ml.l, found, now)
	return out, next, err
}

// metaListing is one metadata-filtered page being listed: the query, and
// the pair whose index drives it with that index's shards.
type metaListing struct {
	l      redisstore.Layout
	q      ListQuery
	pair   string   // the metadata key whose index is scanned
	shards []string // that index: the user's, or every bucket's
}

// shardKeys is the index of the pair k=v: the user's, or across users
// every bucket's shard.
func (ml *metaListing) shardKeys(k, v string) []string {
	if ml.q.User != "" {
		return []string{ml.l.MetaIndex(ml.q.User, k, v)}
	}
	out := make([]string, ml.l.Buckets())
	for b := range out {
		out[b] = ml.l.MetaGlobal(b, k, v)
	}
	return out
}

// smallestIndex is the pair with the fewest members (one pipeline of
// ZCARDs) and its shards; nil shards when it has none: no session matches.
func (ml *metaListing) smallestIndex(ctx context.Context, client rueidis.Client) (string, []string, error) {
	keys := slices.Sorted(maps.Keys(ml.q.Metadata))
	var cmds rueidis.Commands
	for _, k := range keys {
		for _, key := range ml.shardKeys(k, ml.q.Metadata[k]) {
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
				return "", nil, redisstore.Wrap("list sessions", err)
			}
			n += c
		}
		if bestN < 0 || n < bestN {
			best, bestN = k, n
		}
	}
	if bestN == 0 {
		return best, nil, nil
	}
	return best, ml.shardKeys(best, ml.q.Metadata[best]), nil
}

// filter reads the candidates' status, activity and metadata (one
// pipeline of HMGETs) and keeps the first q.Limit that match: their ids,
// the cursor after the last one examined when more may follow, and the
// prunes of the candidates whose session is gone (no record).
func (ml *metaListing) filter(ctx context.Context, client rueidis.Client, cands []hit, more bool, now int64) (found [][2]string, next string, gone []lua.Call, err error) {
	ids := make([][2]string, len(cands))
	cmds := make(rueidis.Commands, len(cands))
	for i, h := range cands {
		ids[i] = memberIDs(ml.q.User, h.member)
		cmds[i] = client.B().Hmget().Key(ml.l.Session(ids[i][0], ids[i][1]).Record).Field("status", "last_activity_at", "metadata").Build()
	}
	cutoff := now - ml.q.AbandonAfter.Microseconds()
	for i, r := range client.DoMulti(ctx, cmds...) {
		f, err := r.ToArray()
		if err != nil || len(f) != 3 {
			return nil, "", nil, redisstore.Wrap("list sessions", err)
		}
		status, serr := f[0].ToString()
		if serr != nil { // no record: expired or deleted
			gone = append(gone, ml.prune(ids[i], cands[i].member))
			continue
		}
		last, _ := f[1].ToString()
		meta, _ := f[2].ToString()
		if !statusMatches(ml.q.Status, status, last, cutoff) || !metaMatches(meta, ml.q.Metadata) {
			continue
		}
		found = append(found, ids[i])
		if len(found) == ml.q.Limit {
			if i < len(cands)-1 || more {
				next = cands[i].cursor()
			}
			return found, next, gone, nil
		}
	}
	if more && len(cands) > 0 {
		next = cands[len(cands)-1].cursor()
	}
	return found, next, gone, nil
}

// prune is the call dropping member, a session with no record, from the
// scanned index (its bucket's shard across users).
func (ml *metaListing) prune(id [2]string, member string) lua.Call {
	idx := ml.shards[0]
	if ml.q.User == "" {
		idx = ml.l.MetaGlobal(ml.l.Bucket(id[0]), ml.pair, ml.q.Metadata[ml.pair])
	}
	return lua.Call{Keys: []string{idx, ml.l.Session(id[0], id[1]).Record}, Args: []string{member}}
}

// pruneGone runs the index prunes of sessions found gone, pipelined.
func pruneGone(ctx context.Context, client rueidis.Client, gone []lua.Call) error {
	if len(gone) == 0 {
		return nil
	}
	for _, r := range lua.SessionMetaPrune.ExecMulti(ctx, client, gone...) {
		if err := r.Error(); err != nil {
			return redisstore.Wrap(lua.SessionMetaPrune.Name, err)
		}
	}
	return nil
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
