// Package events is the live events module: every write of a session
// appends its event to the session's Redis Stream in the write's own script
// (lua/lib/events.lua's emit), and this module serves them as Server-Sent
// Events, replays them after a client's last id, publishes callers' own
// x-<name> events, and records abort requests. One reader per sidecar
// (hub.go) fans the streams out to every subscriber of this sidecar.
package events

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "events", New: New}

// Module serves the event routes.
type Module struct {
	cfg            Config
	store          *Store
	hub            *hub
	m              *metrics
	slots          chan struct{} // one per stream being served
	requestTimeout time.Duration
	logger         *slog.Logger

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// New builds the module over the host's shared session store and starts
// its reader and its Pub/Sub subscription loop.
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	s, cfg, err := sessionstore.Open[Config](deps)
	if err != nil {
		return nil, err
	}
	m := &Module{cfg: cfg, store: &Store{s}, m: newMetrics(), slots: make(chan struct{}, cfg.MaxStreams),
		requestTimeout: deps.RequestTimeout, logger: deps.Logger}
	if m.requestTimeout <= 0 {
		m.requestTimeout = 10 * time.Second
	}
	var grace time.Duration // SESSION_EVENTS=always: no markers
	if s.Config().Events == sessionstore.EventsWatched {
		grace = cfg.Grace()
	}
	m.hub = newHub(deps.Redis, deps.Logger, m.m, cfg.Heartbeat, grace, cfg.refreshEvery())
	ctx, stop := context.WithCancel(context.Background())
	m.stop = stop
	m.wg.Go(func() { m.hub.run(ctx) })
	m.wg.Go(func() { m.hub.subscribe(ctx) })
	return m, nil
}

// Name implements sidecar.Module.
func (m *Module) Name() string { return "events" }

// Routes implements sidecar.Module.
func (m *Module) Routes() []sidecar.Route {
	const base = "/v1/users/{user_id}/sessions/{session_id}"
	return []sidecar.Route{
		{Pattern: "GET " + base + "/events", Handler: m.sessionEvents, Stream: true, Query: []string{"after"}},
		{Pattern: "POST " + base + "/events", Handler: m.publish},
		{Pattern: "GET /v1/users/{user_id}/events", Handler: m.userEvents, Stream: true, Query: []string{"after"}},
		{Pattern: "POST " + base + "/abort", Handler: m.abort},
		{Pattern: "DELETE " + base + "/abort", Handler: m.clearAbort},
	}
}

// Collectors implements sidecar.Collector.
func (m *Module) Collectors() []prometheus.Collector { return m.m.collectors() }

// Close stops the reader and the subscription (streams were ended by the
// host before).
func (m *Module) Close(context.Context) error {
	m.stop()
	m.wg.Wait()
	return nil
}

func (m *Module) sessionEvents(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	_, resume, err := after(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), m.requestTimeout)
	ok, err := m.store.SessionExists(ctx, user, session, resume)
	cancel()
	if err != nil {
		return err
	}
	if !ok {
		return sidecar.NotFound("no session %s/%s", user, session)
	}
	return m.serve(w, r, streamTarget{key: m.store.SessionKey(user, session),
		marker: m.store.sessionMark(user, session), session: true})
}

func (m *Module) userEvents(w http.ResponseWriter, r *http.Request) error {
	user, err := sidecar.PathID(r, "user_id")
	if err != nil {
		return err
	}
	return m.serve(w, r, streamTarget{key: m.store.UserKey(user), marker: m.store.userMark(user)})
}

// customName is a custom event's type.
var customName = regexp.MustCompile(`^x-[a-z0-9_.-]{1,64}$`)

type publishRequest struct {
	Event *string         `json:"event"`
	Data  json.RawMessage `json:"data"`
}

type publishAnswer struct {
	ID string `json:"id"`
}

func (m *Module) publish(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	key, err := sidecar.IdempotencyKey(r)
	if err != nil {
		return err
	}
	var req publishRequest
	if err := sidecar.DecodeJSON(r, &req); err != nil {
		return err
	}
	if req.Event == nil {
		return sidecar.BadRequest("invalid_field", "field \"event\" is required")
	}
	if !customName.MatchString(*req.Event) {
		return sidecar.BadRequest("invalid_field", "field \"event\" must be x- followed by 1-64 characters of a-z 0-9 _ . - (the sidecar's own event types are not for publishing), not %q", *req.Event)
	}
	if req.Data == nil {
		return sidecar.BadRequest("invalid_field", "field \"data\" is required (any JSON value)")
	}
	data, err := compact(req.Data)
	if err != nil {
		return err
	}
	if len(data) > MaxDataBytes {
		return sidecar.Errorf(http.StatusRequestEntityTooLarge, "event_too_large", "field \"data\" is %d bytes of JSON; an event's data may hold at most %d", len(data), MaxDataBytes)
	}
	id, created, err := m.store.Publish(r.Context(), user, session, *req.Event, string(data), key)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !created {
		status = http.StatusOK // a repeat of its Idempotency-Key: the first publish's id
	}
	sidecar.WriteJSON(w, status, publishAnswer{ID: id})
	return nil
}

// compact is data on one line (an SSE data line cannot hold a newline).
func compact(data json.RawMessage) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return nil, sidecar.BadRequest("invalid_field", "field \"data\" is not valid JSON")
	}
	return b.Bytes(), nil
}

type abortAnswer struct {
	AbortRequestedAt string `json:"abort_requested_at"`
}

func (m *Module) abort(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	at, _, err := m.store.Abort(r.Context(), user, session, true)
	if err != nil {
		return err
	}
	sidecar.WriteJSON(w, http.StatusAccepted, abortAnswer{AbortRequestedAt: time.UnixMicro(at).UTC().Format(time.RFC3339Nano)})
	return nil
}

func (m *Module) clearAbort(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	if _, _, err := m.store.Abort(r.Context(), user, session, false); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

var (
	_ sidecar.Module    = (*Module)(nil)
	_ sidecar.Collector = (*Module)(nil)
	_ sidecar.Closer    = (*Module)(nil)
)
