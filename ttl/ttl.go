package ttl

import (
	"context"
	"net/http"

	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "ttl", New: New}

// MaxTTLSeconds bounds PUT .../ttl: ten years.
const MaxTTLSeconds = 10 * 365 * 24 * 3600

// Module serves GET and PUT .../ttl.
type Module struct {
	store *sessionstore.Store
}

// New builds the module over the host's shared session store (the TTL
// script slides every key of the session, whichever module wrote it).
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	s, err := sessionstore.FromDeps(deps)
	if err != nil {
		return nil, err
	}
	return &Module{store: s}, nil
}

// Name implements sidecar.Module.
func (m *Module) Name() string { return "ttl" }

// Routes implements sidecar.Module.
func (m *Module) Routes() []sidecar.Route {
	const path = "/v1/users/{user_id}/sessions/{session_id}/ttl"
	return []sidecar.Route{
		{Pattern: "GET " + path, Handler: m.get},
		{Pattern: "PUT " + path, Handler: m.put},
	}
}

type ttlBody struct {
	TTLSeconds *int64 `json:"ttl_seconds"`
}

func (m *Module) get(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	ttl, err := m.store.TTL(r.Context(), user, session)
	if err != nil {
		return err
	}
	sidecar.WriteJSON(w, http.StatusOK, ttlBody{TTLSeconds: &ttl})
	return nil
}

func (m *Module) put(w http.ResponseWriter, r *http.Request) error {
	user, session, body, err := sidecar.SessionJSON[ttlBody](r)
	if err != nil {
		return err
	}
	if body.TTLSeconds == nil {
		return sidecar.BadRequest("invalid_field", "field \"ttl_seconds\" is required (0 = no expiry)")
	}
	if *body.TTLSeconds < 0 || *body.TTLSeconds > MaxTTLSeconds {
		return sidecar.BadRequest("invalid_field", "field \"ttl_seconds\" must be from 0 (no expiry) to %d", MaxTTLSeconds)
	}
	if err := m.store.SetTTL(r.Context(), user, session, *body.TTLSeconds); err != nil {
		return err
	}
	ttl := *body.TTLSeconds
	if ttl == 0 {
		ttl = -1 // as GET reports it: no expiry
	}
	sidecar.WriteJSON(w, http.StatusOK, ttlBody{TTLSeconds: &ttl})
	return nil
}

var _ sidecar.Module = (*Module)(nil)
