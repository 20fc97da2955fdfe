package messages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
)

// Bounds of one messages_index script: at most IndexBatch messages and
// IndexBatchTerms terms (each term rewrites its postings in the session's
// index, at most 256 of them: about 2 ms of Redis for a full step, as the
// worst indexed append; BENCHMARKS.md).
const (
	IndexBatch      = 100
	IndexBatchTerms = 256
)

// indexDoc is one message read for the index, as messages_index takes it.
type indexDoc struct {
	id, fp string
	body   []byte
	doc    search.Doc
	text   []string
	at     string // µs since the epoch, or "" (now)
}

// args are d's five arguments of messages_index.
func (d indexDoc) args() []string {
	return []string{d.id, d.fp, d.doc.Spec(), strconv.Itoa(d.doc.Length), d.at}
}

// storedDoc analyses a stored message (JSON as the scripts store it)
// exactly as an append analysed it when it came.
func storedDoc(body []byte) (indexDoc, error) {
	var m stored
	if err := json.Unmarshal(body, &m); err != nil || m.ID == nil {
		return indexDoc{}, errors.Join(errors.New("stored message is not a message object"), err)
	}
	text := m.texts()
	d := indexDoc{id: *m.ID, body: body, doc: search.Analyze(text...), text: text, fp: m.fingerprint()}
	var created string
	if json.Unmarshal(m.CreatedAt, &created) == nil {
		if t, err := time.Parse(time.RFC3339Nano, created); err == nil {
			d.at = strconv.FormatInt(t.UnixMicro(), 10)
		}
	}
	return d, nil
}

// StepBytes bounds the messages one catch-up step reads (at least one).
const StepBytes = 1 << 20

// CatchUpStep is one step of putting a session's messages the index lacks
// into it (search.Step: the copies of a fork, the messages written before
// the user's first relevance search under SEARCH_INDEX=on-demand): the
// messages after the cursor ' mseq' in sequence order, at most IndexBatch
// of them, StepBytes of them read and IndexBatchTerms terms, then one
// messages_index script. Returns whether more is left.
func (s *Store) CatchUpStep(ctx context.Context, user, session string) (bool, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return true, err
	}
	l := redisstore.Layout{Cluster: s.Conn().Cluster()}
	keys := SessionKeys(l, user, session)
	at, err := client.Do(ctx, client.B().Hget().Key(l.SearchDocs(user, session)).Field(" mseq").Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		return true, redisstore.Wrap("messages index: cursor", err)
	}
	if at == "" {
		at = "0"
	}
	zs, err := client.Do(ctx, client.B().Zrangebyscore().Key(keys.Order).Min("("+at).Max("+inf").Withscores().Limit(0, IndexBatch).Build()).AsZScores()
	if err != nil || len(zs) == 0 {
		return false, redisstore.Wrap("messages index: order", err)
	}
	lens := make(rueidis.Commands, len(zs))
	for i, z := range zs {
		lens[i] = client.B().Hstrlen().Key(keys.Messages).Field(z.Member).Build()
	}
	n, read := 0, int64(0)
	for _, r := range client.DoMulti(ctx, lens...) {
		size, err := r.AsInt64()
		if err != nil {
			return true, redisstore.Wrap("messages index: sizes", err)
		}
		if n > 0 && read+size > StepBytes {
			break
		}
		read += size
		n++
	}
	ids := make([]string, n)
	for i, z := range zs[:n] {
		ids[i] = z.Member
	}
	bodies, err := client.Do(ctx, client.B().Hmget().Key(keys.Messages).Field(ids...).Build()).ToArray()
	if err != nil {
		return true, redisstore.Wrap("messages index: read", err)
	}
	docs, terms := make([]indexDoc, 0, n), 0
	last := n
	for i, v := range bodies {
		b, err := v.ToString()
		if err != nil {
			continue // gone since
		}
		d, err := storedDoc([]byte(b))
		if err != nil {
			continue // not a message this sidecar wrote: nothing to index
		}
		if len(docs) > 0 && terms+len(d.doc.Terms) > IndexBatchTerms {
			last = i
			break
		}
		terms += len(d.doc.Terms)
		docs = append(docs, d)
	}
	if err := s.nodeFingerprints(ctx, user, session, docs); err != nil {
		return true, err
	}
	docs = indexable(docs)
	args := make([]string, 0, 3+5*len(docs))
	args = append(args, at, strconv.FormatFloat(zs[last-1].Score, 'f', -1, 64), strconv.Itoa(len(docs)))
	for _, d := range docs {
		args = append(args, d.args()...)
	}
	r, err := s.Store.Run(ctx, luaScripts.Index, user, session, args...)
	if c := refusalCode(err); c == "staging" || c == "stage_abandoned" {
		// a staged append is on: its commit (when the user has an index)
		// or the drop of an abandoned one queues the catch-up again
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if n, err := r.Int(0); err != nil || n < 0 {
		return true, err // the cursor moved since the read: read again
	}
	return last < len(zs) || len(zs) == IndexBatch, nil
}

// nodeFingerprints sets each doc's fingerprint to its tree node's (the one
// messages_index checks): one HMGET of the tree. A fingerprint made from a
// stored message can differ from its node's (a field sent as null is
// stored absent), so where they differ the messages are read again and
// kept only when still the bytes analysed (else: fingerprint "", skipped).
func (s *Store) nodeFingerprints(ctx context.Context, user, session string, docs []indexDoc) error {
	if len(docs) == 0 {
		return nil
	}
	client, err := s.Conn().Client()
	if err != nil {
		return err
	}
	keys := SessionKeys(redisstore.Layout{Cluster: s.Conn().Cluster()}, user, session)
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.id
	}
	nodes, err := client.Do(ctx, client.B().Hmget().Key(keys.Tree).Field(ids...).Build()).ToArray()
	if err != nil {
		return redisstore.Wrap("messages index: read nodes", err)
	}
	var differ []int
	for i := range docs {
		v, _ := nodes[i].ToString() // nil: no such node (skipped)
		fp := v[strings.LastIndexByte(v, '\t')+1:]
		if fp != docs[i].fp {
			differ = append(differ, i)
		}
		docs[i].fp = fp
	}
	if len(differ) == 0 {
		return nil
	}
	again := make([]string, len(differ))
	for j, i := range differ {
		again[j] = docs[i].id
	}
	bodies, err := client.Do(ctx, client.B().Hmget().Key(keys.Messages).Field(again...).Build()).ToArray()
	if err != nil {
		return redisstore.Wrap("messages index: read messages", err)
	}
	for j, i := range differ {
		if b, err := bodies[j].ToString(); err != nil || !bytes.Equal([]byte(b), docs[i].body) {
			docs[i].fp = ""
		}
	}
	return nil
}

// indexable is docs without those with nothing to index: no searchable
// word, or no node to check (fingerprint "").
func indexable(docs []indexDoc) []indexDoc {
	out := docs[:0]
	for _, d := range docs {
		if d.fp != "" && len(d.doc.Terms) > 0 {
			out = append(out, d)
		}
	}
	return out
}
