package messages

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/tokens"
)

// MaxCompactions bounds the compactions in force in one session (a read
// of a path examines each).
const MaxCompactions = 100

// compactionPrefix starts the id of the synthetic message that stands for
// a compaction on a path.
const compactionPrefix = "compaction:"

type compactIn struct {
	Summary *string `json:"summary"`
	FromID  string  `json:"from_id"`
	ToID    string  `json:"to_id"`
}

func (m *Module) compact(w http.ResponseWriter, r *http.Request) error {
	user, session, in, err := sidecar.SessionJSON[compactIn](r)
	if err != nil {
		return err
	}
	if in.Summary == nil || *in.Summary == "" || utf8.RuneCountInString(*in.Summary) > sessionstore.MaxSummaryLength {
		return bad("summary", "must be a string of 1-%d characters", sessionstore.MaxSummaryLength)
	}
	if !sidecar.ValidID(in.FromID) {
		return bad("from_id", "must be a message id of the session")
	}
	if !sidecar.ValidID(in.ToID) {
		return bad("to_id", "must be a message id of the session")
	}
	text, err := m.store.Compact(r.Context(), user, session, *in.Summary, in.FromID, in.ToID)
	if err != nil {
		return err
	}
	m.compactions.Inc()
	sidecar.WriteBody(w, http.StatusCreated, text)
	return nil
}

func (m *Module) listCompactions(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	list, err := m.store.Compactions(r.Context(), user, session)
	if err != nil {
		return err
	}
	body := messagesObject(list)
	body = append([]byte(`{"compactions"`), body[len(`{"messages"`):]...)
	sidecar.WriteBody(w, http.StatusOK, body)
	return nil
}

// Compact stores a compaction of the range fromID..toID with summary; it
// returns the compaction (JSON).
func (s *Store) Compact(ctx context.Context, user, session, summary, fromID, toID string) ([]byte, error) {
	r, err := s.Run(ctx, luaScripts.Compact, user, session, newID(), string(jsonString(summary)), fromID, toID,
		strconv.Itoa(tokens.Message(summary)), strconv.Itoa(MaxCompactions))
	if err != nil {
		return nil, err
	}
	status, err := r.String(0)
	if err != nil {
		return nil, redisstore.Wrap(luaScripts.Compact.Name, err)
	}
	if status != "compacted" {
		return nil, s.outcome(luaScripts.Compact.Name, r, status, user, session)
	}
	text, err := r.String(1)
	if err != nil {
		return nil, redisstore.Wrap(luaScripts.Compact.Name, err)
	}
	return []byte(text), nil
}

// Compactions reads the compactions in force (JSON each), oldest first.
func (s *Store) Compactions(ctx context.Context, user, session string) ([][]byte, error) {
	r, err := s.Run(ctx, luaScripts.Read, user, session, "compactions")
	if err != nil {
		return nil, err
	}
	list, err := texts(r, 0)
	return list, redisstore.Wrap(luaScripts.Read.Name, err)
}

// validCursor reports whether a before/after value names a message or a
// compaction on a path.
func validCursor(v string) bool {
	if rest, ok := strings.CutPrefix(v, compactionPrefix); ok {
		return sidecar.ValidID(rest)
	}
	return sidecar.ValidID(v)
}
