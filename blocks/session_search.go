package blocks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
)

// MaxSessionSearchResults is the most results session_search returns.
const MaxSessionSearchResults = 10

// sessionSearch lets the model search the user's past conversations: the
// relevance search over the messages and Q&A entries of all of the user's
// sessions (GET /v1/users/{u}/search). It is offered whenever the user has
// sessions to search (under SEARCH_INDEX=off: an index made before), not
// only once the user has an index: under on-demand (the default) a first
// call builds it, as a first search through the API does.
var sessionSearch = tool{
	name:     "session_search",
	readOnly: true,
	description: "Search the messages and Q&A entries of all of this user's conversations, this one included, by relevance: " +
		"returns the best matches (at most 10), each with its session, kind (message or entry) and id, time and a snippet.",
	parameters: func(v view) map[string]any {
		if !v.searchable {
			return nil
		}
		return map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query": map[string]any{"type": "string", "description": "what to look for, in plain words"},
				"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": MaxSessionSearchResults,
					"description": "the most results (default 5)"},
			},
			"required":             []string{"query"},
			"additionalProperties": false,
		}
	},
	call: callSessionSearch,
}

type sessionSearchArgs struct {
	Query *string `json:"query"`
	Limit *int    `json:"limit"`
}

func callSessionSearch(m *Module, r *http.Request, c toolCall) (toolResult, error) {
	var a sessionSearchArgs
	if res, ok := decodeArgs("session_search", c.args, &a); !ok {
		return res, nil
	}
	if a.Query == nil || strings.TrimSpace(*a.Query) == "" {
		return failed("session_search needs \"query\": the words to look for."), nil
	}
	limit := 5
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > MaxSessionSearchResults {
			return failed("session_search's \"limit\" must be from 1 to %d.", MaxSessionSearchResults), nil
		}
		limit = *a.Limit
	}
	var cov search.Coverage
	if len(search.Query(*a.Query)) > 0 {
		cov = m.index.Prepare(r.Context(), c.user, "")
	}
	res, err := m.index.Find(r.Context(), c.user, "", *a.Query, limit)
	if errors.Is(err, search.ErrNoTerms) {
		return failed("The query %.200q holds no word the search can use (common words such as \"the\" are not indexed); use more specific words.", *a.Query), nil
	}
	if err != nil {
		return toolResult{}, err
	}
	var partial string
	if cov.Building {
		partial = "\n(The search index of this user's conversations is still being built"
		if !cov.Since.IsZero() {
			partial += ": it covers those active since " + cov.Since.UTC().Format(time.RFC3339)
		}
		partial += "; older conversations may be missing. Search again later to cover them.)"
	}
	if len(res) == 0 {
		return toolResult{Result: fmt.Sprintf("No message of this user's conversations matches %.200q.", *a.Query) + partial}, nil
	}
	lines := make([]string, len(res))
	for i, h := range res {
		lines[i] = fmt.Sprintf("[session %s, %s %s, %s] %s", h.SessionID, h.Kind, h.ID, h.Time, h.Snippet)
	}
	return toolResult{Result: strings.Join(lines, "\n") + partial}, nil
}

// searchable reports whether session_search has something to search for
// user: under SEARCH_INDEX=off, whether the user has an index made before
// (the user's list of sessions with documents is not empty); else also
// whether the user has any session (the user's status sets), which a first
// search indexes. One round trip of four ZCARDs.
func (s *Store) searchable(ctx context.Context, user string) (bool, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return false, err
	}
	l := s.layout()
	keys := []string{l.SearchSessions(user)}
	if s.mode != search.Off {
		sets := l.UserIndex(user)
		keys = append(keys, sets[:]...)
	}
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = client.B().Zcard().Key(k).Build()
	}
	for _, r := range client.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		if err != nil {
			return false, redisstore.Wrap("read the user's sessions", err)
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}
