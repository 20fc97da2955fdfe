package messages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
)

// Bounds of one messages_index script: a fork's copies enter the search
// index in steps of at most IndexBatch messages and IndexBatchTerms terms.
const (
	IndexBatch      = 100
	IndexBatchTerms = 4096
)

// indexDoc is one message read for the index, as messages_index takes it.
type indexDoc struct {
	id, fp string
	body   []byte
	doc    search.Doc
	text   []string
	at     string // µs since the epoch, or "" (now)
}

// args are d's six arguments of messages_index.
func (d indexDoc) args() []string {
	return []string{d.id, d.fp, d.doc.Spec(), strconv.Itoa(d.doc.Length), search.Preview(d.text...), d.at}
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

// IndexPath puts the messages of the path root..leaf of a session into
// the search index (a fork's copies: its script copies them unindexed),
// in bounded steps: a page of at most IndexBatch messages read, their
// nodes' fingerprints read, then one messages_index script per IndexBatch
// messages or IndexBatchTerms terms; at most SESSION_MAX_MESSAGES
// messages in all. A message written since it was read is skipped (its
// write indexed it). Returns how many messages it indexed.
func (s *Store) IndexPath(ctx context.Context, user, session, leaf string) (int, error) {
	indexed, read, cursor := 0, 0, ""
	for read < s.cfg.MaxMessages {
		q := PageQuery{Leaf: leaf, Limit: min(IndexBatch, s.cfg.MaxMessages-read), Raw: true}
		if cursor != "" {
			q.Cursor, q.At = "after", cursor
		}
		p, err := s.Path(ctx, user, session, q)
		if err != nil {
			return indexed, fmt.Errorf("index %s/%s: read: %w", user, session, err)
		}
		read += len(p.Messages)
		docs := make([]indexDoc, 0, len(p.Messages))
		for _, b := range p.Messages {
			d, err := storedDoc(b)
			if err != nil {
				return indexed, fmt.Errorf("index %s/%s: %w", user, session, err)
			}
			docs = append(docs, d)
		}
		if err := s.nodeFingerprints(ctx, user, session, docs); err != nil {
			return indexed, fmt.Errorf("index %s/%s: %w", user, session, err)
		}
		n, err := s.indexDocs(ctx, user, session, indexable(docs))
		indexed += n
		if err != nil {
			return indexed, fmt.Errorf("index %s/%s: %w", user, session, err)
		}
		if p.NextCursor == "" || len(p.Messages) == 0 {
			break
		}
		cursor = p.NextCursor
	}
	return indexed, nil
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

// indexDocs runs messages_index over docs, at most IndexBatch messages
// and IndexBatchTerms terms a call; returns how many it indexed.
func (s *Store) indexDocs(ctx context.Context, user, session string, docs []indexDoc) (int, error) {
	indexed := 0
	for len(docs) > 0 {
		n, terms := 0, 0
		for n < len(docs) && n < IndexBatch && (n == 0 || terms+len(docs[n].doc.Terms) <= IndexBatchTerms) {
			terms += len(docs[n].doc.Terms)
			n++
		}
		args := make([]string, 0, 1+6*n)
		args = append(args, strconv.Itoa(n))
		for _, d := range docs[:n] {
			args = append(args, d.args()...)
		}
		r, err := s.Run(ctx, lua.MessagesIndex, user, session, args...)
		if err != nil {
			return indexed, err
		}
		got, err := r.Int(0)
		if err != nil {
			return indexed, redisstore.Wrap(lua.MessagesIndex.Name, err)
		}
		indexed += int(got)
		docs = docs[n:]
	}
	return indexed, nil
}
