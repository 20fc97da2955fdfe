package sessions

import (
	"context"
	"errors"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// Store is the module's Redis side: Cognee's lists (entries, traces,
// session context) and the qa_id index, every write one script over the
// shared session runner. Values are the stored JSON bytes; encoding and
// validation are the cognee package's.
type Store struct{ *sessionstore.Store }

// NewStore returns the module's store over the shared runner.
func NewStore(s *sessionstore.Store) *Store { return &Store{s} }

// Append stores entry (encoded by cognee.NewQAEntry) under qaID, with its
// search document unless mode is search.Off (under search.OnDemand, only
// while the user has an index). When the session already holds qaID
// it stores nothing and returns the stored entry with Created == false.
// pending reports entries another program appended that the search index
// has not taken in (CatchUp indexes them).
func (s *Store) Append(ctx context.Context, user, session, qaID string, entry []byte, mode search.Mode) (st sessionstore.Stored, pending bool, err error) {
	args := []string{qaID, string(entry)}
	if mode = mode.Of(); mode == search.Probe {
		args = append(args, search.ProbeSpec)
	} else if mode != search.Off {
		d := analyseEntry(entry)
		d.spec = mode.Spec(d.spec)
		args = append(args, d.args()...)
	}
	r, err := s.exec(ctx, luaScripts.Append, user, session, args...)
	if err != nil {
		return sessionstore.Stored{}, false, err
	}
	if st, err = sessionstore.StoredOf(r, entry); err != nil || !st.Created {
		return st, false, err
	}
	entriesAppended.Inc()
	pending, err = r.Flag(1)
	return st, pending, err
}

// UpdateEntry sets fields (name, encoded value pairs) of entry qaID and
// merges memify (a JSON object, or nil) into its memify_metadata. It returns
// the updated entry, or a not-found refusal.
func (s *Store) UpdateEntry(ctx context.Context, user, session, qaID string, fields [][2]string, memify []byte) ([]byte, error) {
	args := make([]string, 0, 2+2*len(fields))
	args = append(args, qaID, string(memify))
	for _, f := range fields {
		args = append(args, f[0], f[1])
	}
	r, err := s.exec(ctx, luaScripts.EntryUpdate, user, session, args...)
	if err != nil {
		return nil, noEntry(err, user, session, qaID)
	}
	v, err := r.String(0)
	if err == nil {
		countFeedback(fields)
	}
	return []byte(v), err
}

// Entry returns entry qaID, or a not-found refusal.
func (s *Store) Entry(ctx context.Context, user, session, qaID string) ([]byte, error) {
	r, err := s.exec(ctx, luaScripts.EntryGet, user, session, qaID)
	if err != nil {
		return nil, noEntry(err, user, session, qaID)
	}
	v, err := r.String(0)
	return []byte(v), err
}

// DeleteEntry removes entry qaID, or returns a not-found refusal.
func (s *Store) DeleteEntry(ctx context.Context, user, session, qaID string) error {
	return noEntry(s.execFound(ctx, luaScripts.EntryDelete, user, session, qaID), user, session, qaID)
}

// AppendTrace stores one trace step (encoded by cognee.NewTrace).
func (s *Store) AppendTrace(ctx context.Context, user, session string, trace []byte) error {
	r, err := s.run(ctx, luaScripts.TraceAppend, user, session, string(trace))
	if err != nil {
		return err
	}
	_, err = sessionstore.StoredOf(r, trace)
	return err
}

// AppendContext stores a session-context entry with id, unless one with that
// id exists: then it returns the stored one with Created == false.
func (s *Store) AppendContext(ctx context.Context, user, session, id string, entry []byte) (sessionstore.Stored, error) {
	r, err := s.exec(ctx, luaScripts.ContextAppend, user, session, id, string(entry))
	if err != nil {
		return sessionstore.Stored{}, err
	}
	return sessionstore.StoredOf(r, entry)
}

// UpdateContext merges patch (a JSON object) into context entry id.
func (s *Store) UpdateContext(ctx context.Context, user, session, id string, patch []byte) ([]byte, error) {
	r, err := s.exec(ctx, luaScripts.ContextUpdate, user, session, id, string(patch))
	if err != nil {
		return nil, noContext(err, user, session, id)
	}
	v, err := r.String(0)
	return []byte(v), err
}

// DeleteContext removes context entry id, or returns a not-found refusal.
func (s *Store) DeleteContext(ctx context.Context, user, session, id string) error {
	return noContext(s.execFound(ctx, luaScripts.ContextDelete, user, session, id), user, session, id)
}

// LastEntries returns the newest n entries, oldest first: LRANGE -n -1, so
// the cost is O(n) whatever the session's length.
func (s *Store) LastEntries(ctx context.Context, user, session string, n int) ([]string, error) {
	return s.lrange(ctx, s.Keys(user, session).Entries, int64(-n), -1)
}

// LastTraces returns the newest n trace steps (n <= 0: all), oldest first.
func (s *Store) LastTraces(ctx context.Context, user, session string, n int) ([]string, error) {
	return s.lrange(ctx, s.Keys(user, session).Traces, int64(-n), -1)
}

func (s *Store) lrange(ctx context.Context, key string, start, stop int64) ([]string, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return nil, err
	}
	if start > 0 { // n <= 0 asks for everything
		start = 0
	}
	vals, err := client.Do(ctx, client.B().Lrange().Key(key).Start(start).Stop(stop).Build()).AsStrSlice()
	if err != nil {
		return nil, redisstore.Wrap("lrange", err)
	}
	return vals, nil
}

// noEntry names the missing entry in a not-found refusal.
func noEntry(err error, user, session, qaID string) error {
	if errors.Is(err, redisstore.ErrNotFound) {
		return redisstore.NotFound("session %s/%s has no entry %s", user, session, qaID)
	}
	return err
}

// noContext names the missing context entry in a not-found refusal.
func noContext(err error, user, session, id string) error {
	if errors.Is(err, redisstore.ErrNotFound) {
		return redisstore.NotFound("session %s/%s has no context entry %s", user, session, id)
	}
	return err
}
