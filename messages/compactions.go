package messages

import (
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/lua"
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
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	var in compactIn
	if err := sidecar.DecodeJSON(r, &in); err != nil {
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
	st, err := m.store.simple(r, lua.MessagesCompact, user, session, newID(), string(jsonString(*in.Summary)), in.FromID, in.ToID,
		strconv.Itoa(tokens.Message(*in.Summary)), strconv.Itoa(MaxCompactions))
	if err != nil {
		return err
	}
	m.compactions.Inc()
	sidecar.WriteBody(w, http.StatusCreated, st.Messages[0])
	return nil
}

func (m *Module) listCompactions(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	st, err := m.store.simple(r, lua.MessagesRead, user, session, "compactions")
	if err != nil {
		return err
	}
	body := messagesObject(st.Messages)
	body = append([]byte(`{"compactions"`), body[len(`{"messages"`):]...)
	sidecar.WriteBody(w, http.StatusOK, body)
	return nil
}

// simple runs a script answering {flag, value...} or a refusal.
func (s *Store) simple(r *http.Request, script *lua.Script, user, session string, args ...string) (Stored, error) {
	msg, err := s.Exec(r.Context(), script, user, session, args...)
	if err != nil {
		return Stored{}, err
	}
	return s.storedReply(script.Name, msg, user, session)
}

// validCursor reports whether a before/after value names a message or a
// compaction on a path.
func validCursor(v string) bool {
	if rest, ok := strings.CutPrefix(v, compactionPrefix); ok {
		return sidecar.ValidID(rest)
	}
	return sidecar.ValidID(v)
}
