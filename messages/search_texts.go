package messages

import (
	"context"
	"encoding/json"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Bounds of the messages one search reads for its snippets.
const (
	// SnippetBytes is the message bytes one fetch reads at most (counted
	// against the in-flight byte budget); a message past it keeps its
	// place in the results with an empty snippet.
	SnippetBytes = 8 << 20
	// snippetReadBytes is the most bytes one HMGET of them reads (at least
	// one message).
	snippetReadBytes = 1 << 20
)

// searchTexts is the messages' search.Texts: each message's texts as its
// document was analysed from (storedDoc: the stored body's texts()), read
// by HSTRLEN, then HMGETs of at most snippetReadBytes. A message gone is
// left out.
func (s *Store) searchTexts(ctx context.Context, user, session string, ids []string) (map[string][]string, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return nil, err
	}
	key := SessionKeys(redisstore.Layout{Cluster: s.Conn().Cluster()}, user, session).Messages
	lens := make(rueidis.Commands, len(ids))
	for i, id := range ids {
		lens[i] = client.B().Hstrlen().Key(key).Field(id).Build()
	}
	budget, done, err := sidecar.ReserveAnswer(ctx, SnippetBytes)
	if err != nil {
		return nil, err
	}
	read := 0
	defer func() { done(read) }()
	out := make(map[string][]string, len(ids))
	var reads rueidis.Commands
	var fields [][]string
	chunk := 0
	for i, r := range client.DoMulti(ctx, lens...) {
		size, err := r.AsInt64()
		if err != nil {
			return nil, redisstore.Wrap("messages: search texts", err)
		}
		switch {
		case size == 0: // gone
		case read+int(size) > budget:
			out[ids[i]] = nil // kept, without a snippet
		default:
			if len(fields) == 0 || chunk > 0 && chunk+int(size) > snippetReadBytes {
				fields, chunk = append(fields, nil), 0
			}
			fields[len(fields)-1] = append(fields[len(fields)-1], ids[i])
			chunk += int(size)
			read += int(size)
		}
	}
	for _, f := range fields {
		reads = append(reads, client.B().Hmget().Key(key).Field(f...).Build())
	}
	for i, r := range client.DoMulti(ctx, reads...) {
		vals, err := r.ToArray()
		if err != nil {
			return nil, redisstore.Wrap("messages: search texts", err)
		}
		for j, v := range vals {
			body, err := v.ToString()
			if err != nil || j >= len(fields[i]) {
				continue // gone since
			}
			var m stored
			if json.Unmarshal([]byte(body), &m) != nil {
				out[fields[i][j]] = nil
				continue
			}
			out[fields[i][j]] = m.texts()
		}
	}
	return out, nil
}
