package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Store is the module's writes over the shared session runner, each one
// script (registry_*.lua, scripts.go).
type Store struct{ *sessionstore.Store }

// NewSession is what a create stores.
type NewSession struct {
	Title    *string
	Metadata string // flat JSON string map, "" = none
	Key      string // Idempotency-Key, "" = none
	State    string // initial state object, "" = none
}

// Create creates the session as running with its title and metadata.
// created is false for a repeat of the same Idempotency-Key (nothing
// written); an existing session is a session_exists conflict.
func (s *Store) Create(ctx context.Context, user, session string, n NewSession) (created bool, err error) {
	hasTitle, title := flag(n.Title)
	// an existing session is the script's session_exists refusal (409)
	r, err := s.Run(ctx, luaScripts.Create, user, session, hasTitle, title, n.Metadata, n.Key, n.State)
	if err != nil || r.Dup {
		return false, err
	}
	sessionstore.CountStarted()
	return true, nil
}

// Update is a PATCH: Title "" unchanged, "set" (to TitleValue) or "null";
// MetaSet "" none, "null" (remove all) or a JSON object of the keys to
// set; MetaRemove the keys to remove.
type Update struct {
	Title, TitleValue string
	MetaSet           string
	MetaRemove        []string
}

// Update applies u in one script (404 refusal for no such session; 400
// when the merged metadata would exceed MaxMetadataKeys).
func (s *Store) Update(ctx context.Context, user, session string, u Update) error {
	args := append([]string{u.Title, u.TitleValue, u.MetaSet, strconv.Itoa(MaxMetadataKeys)}, u.MetaRemove...)
	r, err := s.Run(ctx, luaScripts.Update, user, session, args...)
	if errors.Is(err, redisstore.ErrNotFound) {
		return redisstore.NotFound("no session %s/%s", user, session)
	}
	if err != nil {
		return err
	}
	bad := func(err error) error { return redisstore.Wrap(luaScripts.Update.Name, err) }
	status, err := r.String(0)
	if err != nil {
		return bad(err)
	}
	switch status {
	case "too_many_keys":
		return sidecar.BadRequest("invalid_field", "field \"metadata\": the merged metadata would hold more than %d keys", MaxMetadataKeys)
	case "updated":
		started, err := r.Flag(1)
		if err != nil {
			return bad(err)
		}
		if started {
			sessionstore.CountStarted()
		}
		return nil
	}
	return bad(fmt.Errorf("unknown status %q", status))
}

// flag turns an optional string into the scripts' ('1', value) / ('0', ”).
func flag(s *string) (string, string) {
	if s == nil {
		return "0", ""
	}
	return "1", *s
}

// Start is a start-or-reuse call.
type Start struct {
	Title    *string
	Metadata string // the new session's metadata (match included), JSON or ""
	Match    string // JSON or "" (every running session)
}

// Started is what start-or-reuse did.
type Started struct {
	SessionID string
	New       bool
	Closed    []string // auto-closed sessions
}

// abandonArg is SESSION_ABANDON_AFTER_SECONDS in µs, as the scripts take it.
func (s *Store) abandonArg() string {
	return strconv.FormatInt(s.Config().AbandonAfter().Microseconds(), 10)
}

// Active starts or reuses the user's active session in one script.
func (s *Store) Active(ctx context.Context, user string, st Start) (Started, error) {
	hasTitle, title := flag(st.Title)
	r, err := s.Run(ctx, luaScripts.Active, user, newSessionID(), s.abandonArg(), hasTitle, title, st.Metadata, st.Match)
	if err != nil {
		return Started{}, err
	}
	if len(r.Values) != 3 {
		return Started{}, redisstore.Wrap(luaScripts.Active.Name, fmt.Errorf("reply has %d values, want 3", len(r.Values)))
	}
	var out Started
	sid, err1 := r.String(0)
	created, err2 := r.Flag(1)
	closed, err3 := r.Values[2].AsStrSlice()
	if err := errors.Join(err1, err2, err3); err != nil {
		return Started{}, redisstore.Wrap(luaScripts.Active.Name, err)
	}
	out.SessionID, out.New, out.Closed = sid, created, closed
	if out.New {
		sessionstore.CountStarted()
	}
	for range out.Closed {
		s.CountEnded("auto_closed")
	}
	return out, nil
}

// ActiveEnd ends the session start-or-reuse would reuse as completed, with
// summary (nil = none); a not-found refusal when none is running.
func (s *Store) ActiveEnd(ctx context.Context, user string, summary *string, match string) (string, error) {
	hasSummary, text := flag(summary)
	r, err := s.Run(ctx, luaScripts.ActiveEnd, user, newSessionID(), s.abandonArg(), hasSummary, text, match)
	if errors.Is(err, redisstore.ErrNotFound) {
		return "", redisstore.NotFound("user %s has no active session", user)
	}
	if err != nil {
		return "", err
	}
	sid, err := r.String(0)
	if err != nil {
		return "", redisstore.Wrap(luaScripts.ActiveEnd.Name, err)
	}
	s.CountEnded("completed")
	return sid, nil
}
