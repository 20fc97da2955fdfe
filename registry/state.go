package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// State limits.
const (
	MaxStateBytes = 64 << 10 // a state object, and a patch
	MaxStateDepth = 32       // nesting of a patch
)

// checkState validates a state object or merge patch (named field) and
// returns it compacted.
func checkState(field string, raw []byte) (string, error) {
	if len(raw) > MaxStateBytes {
		return "", sidecar.BadRequest("invalid_field", "%s is %d bytes; at most %d", field, len(raw), MaxStateBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth, first := 0, true
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", sidecar.BadRequest("invalid_field", "%s is not valid JSON: %v", field, err)
		}
		if d, ok := tok.(json.Delim); ok {
			if first && d != '{' {
				return "", sidecar.BadRequest("invalid_field", "%s must be a JSON object", field)
			}
			if d == '{' || d == '[' {
				depth++
				if depth > MaxStateDepth {
					return "", sidecar.BadRequest("invalid_field", "%s nests deeper than %d levels", field, MaxStateDepth)
				}
			} else {
				depth--
			}
		} else if first {
			return "", sidecar.BadRequest("invalid_field", "%s must be a JSON object", field)
		}
		first = false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", sidecar.BadRequest("invalid_field", "%s is not valid JSON: %v", field, err)
	}
	return b.String(), nil
}

// readPatch reads a state PATCH body: the merge patch itself.
func readPatch(r *http.Request) (string, error) {
	var raw json.RawMessage
	if err := sidecar.DecodeJSON(r, &raw); err != nil {
		return "", err
	}
	return checkState("the merge patch", raw)
}

func (m *Module) getSessionState(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	state, err := m.store.SessionState(r.Context(), user, session)
	if err != nil {
		return err
	}
	sidecar.WriteBody(w, http.StatusOK, []byte(state))
	return nil
}

func (m *Module) patchSessionState(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	patch, err := readPatch(r)
	if err != nil {
		return err
	}
	state, err := m.store.PatchSessionState(r.Context(), user, session, patch)
	if err != nil {
		return err
	}
	sidecar.WriteBody(w, http.StatusOK, []byte(state))
	return nil
}

func (m *Module) getUserState(w http.ResponseWriter, r *http.Request) error {
	user, err := sidecar.PathID(r, "user_id")
	if err != nil {
		return err
	}
	state, err := m.store.UserState(r.Context(), user)
	if err != nil {
		return err
	}
	sidecar.WriteBody(w, http.StatusOK, []byte(state))
	return nil
}

func (m *Module) patchUserState(w http.ResponseWriter, r *http.Request) error {
	user, err := sidecar.PathID(r, "user_id")
	if err != nil {
		return err
	}
	patch, err := readPatch(r)
	if err != nil {
		return err
	}
	state, err := m.store.PatchUserState(r.Context(), user, patch)
	if err != nil {
		return err
	}
	sidecar.WriteBody(w, http.StatusOK, []byte(state))
	return nil
}

// readableState refuses a stored state that is not a JSON object (another
// program wrote it): answered as it is, it would break the document's
// promise and every client's decoding.
func readableState(what, state string) (string, error) {
	if t := strings.TrimSpace(state); t == "" || t[0] != '{' || !json.Valid([]byte(t)) {
		return "", errStateUnreadable(what)
	}
	return state, nil
}

// errStateUnreadable is the 409 of a read, or of a patch whose script
// found the stored state not an object (its reply -2).
func errStateUnreadable(what string) error {
	return redisstore.Refuse(redisstore.ErrConflict, "state_unreadable",
		"the stored %s is not a JSON object (another program wrote it); nothing was changed: delete the key or write an object to it", what)
}

var errStateTooBig = sidecar.BadRequest("invalid_field", "the state after the patch would exceed %d bytes; nothing was changed", MaxStateBytes)

// SessionState reads the session's state ({} when none was set); a
// not-found refusal for no such session.
func (s *Store) SessionState(ctx context.Context, user, session string) (string, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return "", err
	}
	k := s.Keys(user, session)
	res := client.DoMulti(ctx,
		client.B().Get().Key(redisstore.Layout{Cluster: s.Conn().Cluster()}.SessionKey(SessionStateFamily, user, session)).Build(),
		client.B().Exists().Key(k.Entries, k.Traces, k.Context, k.Record).Build())
	n, err := res[1].AsInt64()
	if err != nil {
		return "", redisstore.Wrap("session state", err)
	}
	if n == 0 {
		return "", redisstore.NotFound("no session %s/%s", user, session)
	}
	state, err := res[0].ToString()
	if rueidis.IsRedisNil(err) {
		return "{}", nil
	}
	if err != nil {
		return "", redisstore.Wrap("session state", err)
	}
	return readableState("session state", state)
}

// PatchSessionState merges patch into the session's state in one script.
func (s *Store) PatchSessionState(ctx context.Context, user, session, patch string) (string, error) {
	r, err := s.Run(ctx, luaScripts.State, user, session, patch, strconv.Itoa(MaxStateBytes))
	if errors.Is(err, redisstore.ErrNotFound) {
		return "", redisstore.NotFound("no session %s/%s", user, session)
	}
	if err != nil {
		return "", err
	}
	state, err := storedState(luaScripts.State, "session state", r)
	if err != nil {
		return "", err
	}
	started, err := r.Flag(2)
	if err != nil {
		return "", redisstore.Wrap(luaScripts.State.Name, err)
	}
	if started {
		sessionstore.CountStarted()
	}
	return state, nil
}

// storedState decodes the answer r of a state script about what (the
// session's or the user's state): the state of {'ok', 'stored', state,
// ...}, errStateTooBig for {'ok', 'too_big'}, errStateUnreadable for
// {'ok', 'unreadable'} (a stored state that is not a JSON object).
func storedState(script *lua.Script, what string, r lua.Reply) (string, error) {
	status, err := r.String(0)
	if err != nil {
		return "", redisstore.Wrap(script.Name, err)
	}
	switch status {
	case "stored":
		state, err := r.String(1)
		return state, redisstore.Wrap(script.Name, err)
	case "too_big":
		return "", errStateTooBig
	case "unreadable":
		return "", errStateUnreadable(what)
	}
	return "", redisstore.Wrap(script.Name, fmt.Errorf("unknown status %q", status))
}

// UserState reads the user's state ({} when none).
func (s *Store) UserState(ctx context.Context, user string) (string, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return "", err
	}
	key := redisstore.Layout{Cluster: s.Conn().Cluster()}.UserKey(UserStateFamily, user)
	state, err := client.Do(ctx, client.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "{}", nil
	}
	if err != nil {
		return "", redisstore.Wrap("user state", err)
	}
	return readableState("user state", state)
}

// PatchUserState merges patch into the user's state in one script.
func (s *Store) PatchUserState(ctx context.Context, user, patch string) (string, error) {
	r, err := s.Run(ctx, luaScripts.UserState, user, newSessionID(), patch, strconv.Itoa(MaxStateBytes))
	if err != nil {
		return "", err
	}
	return storedState(luaScripts.UserState, "user state", r)
}
