package blocks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
)

// MaxSessionSearchResults is the most results session_search returns.
const MaxSessionSearchResults = 10

// sessionSearch lets the model search the user's past conversations: the
// relevance search over the messages and Q&A entries of all of the user's
// sessions (GET /v1/users/{u}/search). It is offered once the user has a
// document in that index.
var sessionSearch = tool{
	name: "session_search",
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
	if len(search.Query(*a.Query)) > 0 {
		m.index.Prepare(r.Context(), c.user, "")
	}
	res, err := m.index.Find(r.Context(), c.user, "", *a.Query, limit)
	if errors.Is(err, search.ErrNoTerms) {
		return failed("The query %.200q holds no word the search can use (common words such as \"the\" are not indexed); use more specific words.", *a.Query), nil
	}
	if err != nil {
		return toolResult{}, err
	}
	if len(res) == 0 {
		return toolResult{Result: fmt.Sprintf("No message of this user's conversations matches %.200q.", *a.Query)}, nil
	}
	lines := make([]string, len(res))
	for i, h := range res {
		lines[i] = fmt.Sprintf("[session %s, %s %s, %s] %s", h.SessionID, h.Kind, h.ID, h.Time, h.Snippet)
	}
	return toolResult{Result: strings.Join(lines, "\n")}, nil
}

// searchable reports whether user has a document in the relevance index
// (the user's list of sessions with documents is not empty): one ZCARD; under
// SEARCH_INDEX=on-demand, also whether this session holds messages or
// entries (the user's first search builds the index).
func (s *Store) searchable(ctx context.Context, user, session string) (bool, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return false, err
	}
	n, err := client.Do(ctx, client.B().Zcard().Key(s.layout().SearchSessions(user)).Build()).AsInt64()
	if err != nil {
		return false, redisstore.Wrap("read the user's indexed sessions", err)
	}
	if n > 0 || s.mode != search.OnDemand {
		return n > 0, nil
	}
	l := s.layout()
	cmds := rueidis.Commands{client.B().Zcard().Key(l.SessionKey(redisstore.MessageOrderFamily, user, session)).Build(),
		client.B().Llen().Key(l.Session(user, session).Entries).Build()}
	for _, r := range client.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		if err != nil {
			return false, redisstore.Wrap("read the session's messages", err)
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}
