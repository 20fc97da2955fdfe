package usage

import (
	"context"
	"strconv"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// Store is the module's writes over the shared session runner: usage
// counting and the end of a session, each one script.
type Store struct{ *sessionstore.Store }

// Usage is one LLM call to add to a session.
type Usage struct {
	Model       string
	TokensIn    int64
	TokensOut   int64
	CostNanoUSD int64
	Failed      bool
	// IdempotencyKey makes a retried post count once per session ("" = none).
	IdempotencyKey string
	// Result is what the caller answers; a repeat of the key gets it back.
	Result []byte
}

// AddUsage counts u in the session record (created running if absent), its
// per-model breakdown and the all-time totals, in one script. For a repeated
// idempotency key it counts nothing and returns the first result with
// Created == false.
func (s *Store) AddUsage(ctx context.Context, user, session string, u Usage) (sessionstore.Stored, error) {
	failed := "0"
	if u.Failed {
		failed = "1"
	}
	msg, err := s.Exec(ctx, lua.SessionUsage, user, session, u.Model,
		strconv.FormatInt(u.TokensIn, 10), strconv.FormatInt(u.TokensOut, 10),
		strconv.FormatInt(u.CostNanoUSD, 10), failed, u.IdempotencyKey, string(u.Result))
	if err != nil {
		return sessionstore.Stored{}, err
	}
	return sessionstore.StoredReply(msg, u.Result)
}

// End marks the session completed or failed. It returns ended == false when
// it had already ended with that status; a session_ended conflict when with
// the other; a not-found refusal for no such session.
// summary (nil = none) is stored as the session's human summary.
func (s *Store) End(ctx context.Context, user, session, status string, summary *string) (ended bool, err error) {
	hasSummary, text := "0", ""
	if summary != nil {
		hasSummary, text = "1", *summary
	}
	msg, err := s.Exec(ctx, lua.SessionEnd, user, session, status, hasSummary, text)
	if err != nil {
		return false, err
	}
	if arr, aerr := msg.ToArray(); aerr == nil && len(arr) == 2 {
		st, _ := arr[1].ToString()
		return false, redisstore.Refuse(redisstore.ErrConflict, "session_ended", "session %s/%s already ended (%s)", user, session, st)
	}
	n, err := msg.AsInt64()
	if err != nil {
		return false, redisstore.Wrap("session_end", err)
	}
	switch n {
	case 0:
		return false, redisstore.NotFound("no session %s/%s", user, session)
	case 2:
		return false, nil
	}
	return true, nil
}
