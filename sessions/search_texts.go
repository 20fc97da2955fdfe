package sessions

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// entryTexts is what an entry's search document is analysed from: its
// question, context and answer, those that are non-empty JSON strings, in
// that order (analyseEntry). An element that is not a JSON object gives
// what it has.
func entryTexts(stored []byte) []string {
	var texts [3]json.RawMessage // question, context, answer
	pick := func(key string, raw json.RawMessage) {
		switch key {
		case "question":
			texts[0] = raw
		case "context":
			texts[1] = raw
		case "answer":
			texts[2] = raw
		}
	}
	if !sidecar.ObjectFields(stored, func(key, raw []byte) bool { pick(string(key), raw); return true }) {
		texts = [3]json.RawMessage{}
		if strict, err := cognee.Strict(stored); err == nil {
			var e map[string]json.RawMessage
			if json.Unmarshal(strict, &e) == nil {
				for k, v := range e {
					pick(k, v)
				}
			}
		}
	}
	var out []string
	for _, raw := range texts {
		if s, ok := jsonString(raw); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// searchTexts is the entries' search.Texts: each qa_id's texts as its
// document was analysed from (one session_entry_get each; an entry gone,
// or a session gone, is left out).
func (s *Store) searchTexts(ctx context.Context, user, session string, qaIDs []string) (map[string][]string, error) {
	out := make(map[string][]string, len(qaIDs))
	for _, id := range qaIDs {
		entry, err := s.Entry(ctx, user, session, id)
		if errors.Is(err, redisstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = entryTexts(entry)
	}
	return out, nil
}
