package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "registry", New: New}

// Module serves the registry routes.
type Module struct {
	store        *Store
	abandonAfter time.Duration
	logger       *slog.Logger
}

// New builds the module over the host's shared session store.
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	s, err := sessionstore.FromDeps(deps)
	if err != nil {
		return nil, err
	}
	return &Module{store: &Store{s}, abandonAfter: s.Config().AbandonAfter(), logger: deps.Logger}, nil
}

// Name implements sidecar.Module.
func (m *Module) Name() string { return "registry" }

// Routes implements sidecar.Module.
func (m *Module) Routes() []sidecar.Route {
	return []sidecar.Route{
		{Pattern: "POST /v1/users/{user_id}/sessions", Handler: m.create},
		{Pattern: "PATCH /v1/users/{user_id}/sessions/{session_id}", Handler: m.update},
		{Pattern: "POST /v1/users/{user_id}/active-session", Handler: m.active},
		{Pattern: "POST /v1/users/{user_id}/active-session/end", Handler: m.activeEnd},
		{Pattern: "GET /v1/users/{user_id}/sessions/{session_id}/state", Handler: m.getSessionState},
		{Pattern: "PATCH /v1/users/{user_id}/sessions/{session_id}/state", Handler: m.patchSessionState},
		{Pattern: "GET /v1/users/{user_id}/state", Handler: m.getUserState},
		{Pattern: "PATCH /v1/users/{user_id}/state", Handler: m.patchUserState},
	}
}

type createRequest struct {
	SessionID *string            `json:"session_id"`
	Title     *string            `json:"title"`
	Metadata  map[string]*string `json:"metadata"`
	State     json.RawMessage    `json:"state"`
}

func (m *Module) create(w http.ResponseWriter, r *http.Request) error {
	user, err := sidecar.PathID(r, "user_id")
	if err != nil {
		return err
	}
	var req createRequest
	if err := sidecar.DecodeOptionalJSON(r, &req); err != nil { // every field is optional: no body is {}
		return err
	}
	key, err := sidecar.IdempotencyKey(r)
	if err != nil {
		return err
	}
	var session string
	switch {
	case req.SessionID != nil:
		if !sidecar.ValidID(*req.SessionID) {
			return sidecar.BadRequest("invalid_field", "field \"session_id\" must be 1-128 characters of A-Z a-z 0-9 _ . @ -")
		}
		session = *req.SessionID
	case key != "":
		session = keyedSessionID(user, key)
	default:
		session = newSessionID()
	}
	if req.Title != nil {
		if err := checkTitle(*req.Title); err != nil {
			return err
		}
	}
	meta, err := createMeta(req.Metadata)
	if err != nil {
		return err
	}
	var state string
	if req.State != nil && !bytes.Equal(req.State, null) {
		if state, err = checkState("field \"state\"", req.State); err != nil {
			return err
		}
	}
	created, err := m.store.Create(r.Context(), user, session, NewSession{Title: req.Title, Metadata: meta, Key: key, State: state})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return m.writeRecord(w, r, status, user, session)
}

// writeRecord answers the session's record as GET .../sessions/{s} does.
func (m *Module) writeRecord(w http.ResponseWriter, r *http.Request, status int, user, session string) error {
	st, err := m.store.Get(r.Context(), user, session)
	if err != nil {
		return err
	}
	sidecar.WriteJSON(w, status, st.JSON(m.abandonAfter, true))
	return nil
}

type updateRequest struct {
	Title    json.RawMessage `json:"title"`
	Metadata json.RawMessage `json:"metadata"`
}

var null = []byte("null")

func (m *Module) update(w http.ResponseWriter, r *http.Request) error {
	user, session, req, err := sidecar.SessionJSON[updateRequest](r)
	if err != nil {
		return err
	}
	var u Update
	switch {
	case req.Title == nil:
	case bytes.Equal(req.Title, null):
		u.Title = "null"
	default:
		if json.Unmarshal(req.Title, &u.TitleValue) != nil {
			return sidecar.BadRequest("invalid_field", "field \"title\" must be a string or null")
		}
		if err := checkTitle(u.TitleValue); err != nil {
			return err
		}
		u.Title = "set"
	}
	switch {
	case req.Metadata == nil:
	case bytes.Equal(req.Metadata, null):
		u.MetaSet = "null"
	default:
		var patch map[string]*string
		if json.Unmarshal(req.Metadata, &patch) != nil {
			return sidecar.BadRequest("invalid_field", "field \"metadata\" must be an object of string or null values")
		}
		if len(patch) > 2*MaxMetadataKeys {
			return sidecar.BadRequest("invalid_field", "field \"metadata\" names %d keys; a patch may name at most %d", len(patch), 2*MaxMetadataKeys)
		}
		set := map[string]string{}
		for k, v := range patch {
			if err := checkMeta("metadata", k, v, true); err != nil {
				return err
			}
			if v == nil {
				u.MetaRemove = append(u.MetaRemove, k)
			} else {
				set[k] = *v
			}
		}
		if len(set) > 0 {
			b, err := json.Marshal(set)
			if err != nil {
				return err
			}
			u.MetaSet = string(b)
		}
	}
	if err := m.store.Update(r.Context(), user, session, u); err != nil {
		return err
	}
	return m.writeRecord(w, r, http.StatusOK, user, session)
}

var _ sidecar.Module = (*Module)(nil)
