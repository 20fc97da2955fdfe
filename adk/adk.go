// Package adk is the Google ADK session service module: an ADK session
// (app, user, session) is the sidecar session <user>/<SidecarSession(app,
// session)>, so two apps' sessions of one id are two sessions; its events, its state and the state
// its user's sessions of the app share (`user:` keys) are keys of the
// user's slot, the state every user of the app shares (`app:` keys) a key
// of the app's. appendEvent is one script: the event and its state delta
// together, refused as a whole when the caller's copy is stale. The
// TypeScript client's SidecarSessionService (@agentsidecar/client/adk) is
// ADK's BaseSessionService over these routes.
package adk

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "adk", New: New}

// Limits of a request.
const (
	MaxDeltaKeys = 1000 // keys of one state delta (or initial state)
	MaxKeyBytes  = 1024 // a state key
	MaxStateKeys = 1000 // keys of each state (a session's, a user's of an app, an app's)
	DefaultPage  = 100  // events per page
	MaxPage      = 1000
)

// Module serves the ADK routes.
type Module struct {
	store  *Store
	cfg    Config
	logger *slog.Logger
}

// New builds the module over the host's shared session store.
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	s, cfg, err := sessionstore.Open[Config](deps)
	if err != nil {
		return nil, err
	}
	return &Module{store: &Store{Store: s, cfg: cfg, maxAnswer: deps.Limits.MaxAnswerBytes}, cfg: cfg, logger: deps.Logger}, nil
}

// Name implements sidecar.Module.
func (m *Module) Name() string { return "adk" }

const base = "/v1/adk/apps/{app_name}/users/{user_id}/sessions"

// Routes implements sidecar.Module.
func (m *Module) Routes() []sidecar.Route {
	return []sidecar.Route{
		{Pattern: "POST " + base, Handler: m.create},
		{Pattern: "GET " + base, Handler: m.list, Query: []string{"limit", "offset", "page", "order"}},
		{Pattern: "GET /v1/adk/apps/{app_name}/sessions", Handler: m.listApp, Query: []string{"limit", "offset", "page", "order", "cursor"}},
		{Pattern: "GET " + base + "/{session_id}", Handler: m.get, Query: []string{"num_recent_events", "after_timestamp", "limit", "cursor"}},
		{Pattern: "DELETE " + base + "/{session_id}", Handler: m.delete},
		{Pattern: "POST " + base + "/{session_id}/events", Handler: m.appendEvent,
			MaxBodyBytes: int64(m.cfg.MaxEventBytes) + 2*int64(m.cfg.MaxStateBytes) + 64<<10},
	}
}

// split is a state key's scope (s, u, a, t) and its key without the prefix.
func split(k string) (string, string) {
	switch {
	case strings.HasPrefix(k, "app:"):
		return "a", k[len("app:"):]
	case strings.HasPrefix(k, "user:"):
		return "u", k[len("user:"):]
	case strings.HasPrefix(k, "temp:"):
		return "t", k
	}
	return "s", k
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// pairsOf reads reply value i, an array of strings.
func pairsOf(r lua.Reply, i int) ([]string, error) {
	if i >= len(r.Values) {
		return nil, errors.New("reply too short")
	}
	return r.Values[i].AsStrSlice()
}

// notFound names the ADK session of a missing answer.
func notFound(err error, app, user, session string) error {
	if errors.Is(err, redisstore.ErrNotFound) {
		return redisstore.NotFound("no ADK session %s/%s of app %s", user, session, app)
	}
	return err
}

// ids are the path's app, user and session (session "" when absent).
func ids(r *http.Request, withSession bool) (app, user, session string, err error) {
	names := []string{"app_name", "user_id"}
	if withSession {
		names = append(names, "session_id")
	}
	v, err := sidecar.PathIDs(r, names...)
	if err != nil {
		return "", "", "", err
	}
	if withSession {
		session = v[2]
	}
	return v[0], v[1], session, nil
}

// checkState validates a state (or delta) object: at most MaxDeltaKeys
// keys of at most MaxKeyBytes.
func checkState(field string, st map[string]json.RawMessage) error {
	if len(st) > MaxDeltaKeys {
		return sidecar.BadRequest("invalid_field", "field %q has %d keys; at most %d", field, len(st), MaxDeltaKeys)
	}
	for k := range st {
		if k == "" || len(k) > MaxKeyBytes {
			return sidecar.BadRequest("invalid_field", "field %q: a key must be 1-%d bytes", field, MaxKeyBytes)
		}
	}
	return nil
}

type createRequest struct {
	SessionID *string                    `json:"session_id"`
	State     map[string]json.RawMessage `json:"state"`
}

func (m *Module) create(w http.ResponseWriter, r *http.Request) error {
	app, user, _, err := ids(r, false)
	if err != nil {
		return err
	}
	var req createRequest
	if err := sidecar.DecodeOptionalJSON(r, &req); err != nil {
		return err
	}
	session := ""
	if req.SessionID != nil {
		if !sidecar.ValidID(*req.SessionID) {
			return sidecar.BadRequest("invalid_field", "field \"session_id\" must be 1-128 characters of A-Z a-z 0-9 _ . @ -")
		}
		session = *req.SessionID
	} else {
		session = newID()
	}
	if err := checkState("state", req.State); err != nil {
		return err
	}
	if _, err := m.store.Create(r.Context(), app, user, session, newDelta(req.State)); err != nil {
		return err
	}
	return m.answer(w, r, http.StatusCreated, app, user, session, PageQuery{Limit: DefaultPage})
}

func (m *Module) get(w http.ResponseWriter, r *http.Request) error {
	app, user, session, err := ids(r, true)
	if err != nil {
		return err
	}
	var q PageQuery
	if q.NumRecent, err = sidecar.QueryInt(r, "num_recent_events", 0, 0, math.MaxInt32); err != nil {
		return err
	}
	if q.Limit, err = sidecar.QueryInt(r, "limit", DefaultPage, 1, MaxPage); err != nil {
		return err
	}
	if s := r.URL.Query().Get("after_timestamp"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return sidecar.BadRequest("invalid_query", "after_timestamp must be a number (the events' timestamps' unit)")
		}
		if f != 0 { // ADK: 0 is no bound
			q.AfterTimestamp = s
		}
	}
	if q.Cursor, err = scriptCursor(r.URL.Query().Get("cursor")); err != nil {
		return err
	}
	return m.answer(w, r, http.StatusOK, app, user, session, q)
}

// newID is a random UUID (version 4), as ADK names a session.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// scriptCursor is a page's cursor as adk_read.lua takes it, "<end>:<low>"
// (events below index end, down to low; "" for the first page), from the
// opaque cursor a page answered (apiCursor); 400 invalid_cursor for any
// other.
func scriptCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	f, err := sidecar.DecodeCursor(c, 2)
	if err != nil {
		return "", err
	}
	top, err1 := strconv.Atoi(f[0])
	low, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || low < 0 || low > top {
		return "", sidecar.NotACursor()
	}
	return strconv.Itoa(top) + ":" + strconv.Itoa(low), nil
}

// apiCursor is the opaque cursor of the script's next page, "<end>:<low>"
// ("" none).
func apiCursor(next string) string {
	if next == "" {
		return ""
	}
	end, low, _ := strings.Cut(next, ":")
	return sidecar.EncodeCursor(end, low)
}

// answer writes a page of the session: its fields and merged state on the
// first page, the page's events oldest first, and next_cursor.
func (m *Module) answer(w http.ResponseWriter, r *http.Request, status int, app, user, session string, q PageQuery) error {
	p, err := m.store.Read(r.Context(), app, user, session, q)
	if err != nil {
		return err
	}
	var b []byte
	b = append(b, `{"id":`...)
	b = strconv.AppendQuote(b, session)
	b = append(b, `,"app_name":`...)
	b = strconv.AppendQuote(b, app)
	b = append(b, `,"user_id":`...)
	b = strconv.AppendQuote(b, user)
	b = append(b, `,"sidecar_session_id":`...)
	b = strconv.AppendQuote(b, SidecarSession(app, session))
	if q.Cursor == "" {
		b = append(b, `,"state":`...)
		b = merged(b, p)
		b = append(b, `,"last_update_time":`...)
		b = append(b, p.LastUpdate...)
		b = append(b, `,"created_at":`...)
		b = append(b, p.Created...)
		b = append(b, `,"event_count":`...)
		b = strconv.AppendInt(b, p.N, 10)
	}
	b = append(b, `,"events":[`...)
	for i := len(p.Events) - 1; i >= 0; i-- {
		if i < len(p.Events)-1 {
			b = append(b, ',')
		}
		b = append(b, p.Events[i]...)
	}
	b = append(b, `],"next_cursor":`...)
	if p.Next == "" {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendQuote(b, p.Next)
	}
	b = append(b, '}')
	sidecar.WriteBody(w, status, b)
	return nil
}

// merged is ADK's mergeStates: the session's state, then the app's keys
// (app:), then the user's (user:).
func merged(b []byte, p Page) []byte {
	b = append(b, '{')
	first := true
	add := func(prefix string, pairs []string) {
		for i := 0; i+1 < len(pairs); i += 2 {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendString(b, prefix+pairs[i])
			b = append(b, ':')
			b = append(b, pairs[i+1]...)
		}
	}
	add("", p.State)
	add("app:", p.App)
	add("user:", p.User)
	return append(b, '}')
}

// appendString appends s as a JSON string (a state key may hold any
// character; strconv.AppendQuote writes Go escapes such as \x01 and \a,
// not JSON).
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

type listed struct {
	ID               string          `json:"id"`
	AppName          string          `json:"app_name"`
	UserID           string          `json:"user_id"`
	SidecarSessionID string          `json:"sidecar_session_id"`
	LastUpdateTime   json.RawMessage `json:"last_update_time"`
}

type listAnswer struct {
	Sessions   []listed `json:"sessions"`
	Page       int      `json:"page"`
	Limit      int      `json:"limit"`
	TotalItems int      `json:"total_items"`
	TotalPages int      `json:"total_pages"`
}

// window is ADK's listSessions paging (InMemorySessionService's): without
// limit every session from offset, as one page; with limit, page (or
// offset) picks the window. It answers the window's start and size (-1:
// to the end) and the answer's figures but the sessions; total is the
// sessions listed.
func window(r *http.Request, total int) (start, size int, ans listAnswer, err error) {
	ans = listAnswer{Sessions: []listed{}, Page: 1, TotalItems: total}
	if start, err = sidecar.QueryInt(r, "offset", 0, 0, math.MaxInt32); err != nil {
		return 0, 0, ans, err
	}
	if r.URL.Query().Get("limit") == "" {
		ans.Limit = total
		if total > 0 {
			ans.TotalPages = 1
		}
		return start, -1, ans, nil
	}
	limit, err := sidecar.QueryInt(r, "limit", 0, 0, math.MaxInt32)
	if err != nil {
		return 0, 0, ans, err
	}
	ans.Limit = limit
	if limit > 0 {
		ans.TotalPages = (total + limit - 1) / limit
	}
	if r.URL.Query().Get("page") != "" {
		page, err := sidecar.QueryInt(r, "page", 1, 1, math.MaxInt32)
		if err != nil {
			return 0, 0, ans, err
		}
		start, ans.Page = (page-1)*limit, page
	} else if limit > 0 {
		ans.Page = start/limit + 1
	}
	return start, limit, ans, nil
}

// order reads the query's order: "" (creation), asc or desc.
func order(r *http.Request) (string, error) {
	o := r.URL.Query().Get("order")
	if o != "" && o != "asc" && o != "desc" {
		return "", sidecar.BadRequest("invalid_query", "order must be asc or desc")
	}
	return o, nil
}

// list answers as ADK's listSessions of one user: creation order, or by
// last update time (then id) with order=asc|desc; limit with offset or
// page.
func (m *Module) list(w http.ResponseWriter, r *http.Request) error {
	app, user, _, err := ids(r, false)
	if err != nil {
		return err
	}
	order, err := order(r)
	if err != nil {
		return err
	}
	if _, _, _, err := window(r, 0); err != nil { // the query's refusals before any read
		return err
	}
	all, err := m.store.List(r.Context(), app, user)
	if err != nil {
		return err
	}
	ts := func(l Listed) float64 { f, _ := strconv.ParseFloat(l.LastUpdate, 64); return f }
	switch order {
	case "asc":
		slices.SortStableFunc(all, func(a, b Listed) int { return cmpTimes(ts(a), ts(b), a.ID, b.ID) })
	case "desc":
		slices.SortStableFunc(all, func(a, b Listed) int { return cmpTimes(ts(b), ts(a), a.ID, b.ID) })
	}
	start, size, ans, _ := window(r, len(all))
	end := len(all)
	if size >= 0 {
		end = min(start+size, len(all))
	}
	if start < end {
		all = all[start:end]
	} else {
		all = nil
	}
	for _, l := range all {
		ans.Sessions = append(ans.Sessions, listed{ID: l.ID, AppName: app, UserID: user, SidecarSessionID: SidecarSession(app, l.ID),
			LastUpdateTime: json.RawMessage(l.LastUpdate)})
	}
	sidecar.WriteJSON(w, http.StatusOK, ans)
	return nil
}

type appListAnswer struct {
	listAnswer
	NextCursor *string `json:"next_cursor"`
}

// listApp answers as ADK's listSessions without a userId: the app's
// sessions across users, in creation order or by last update time (then
// id, then user) with order; limit with offset or page, as list. A page
// holds at most AppPage sessions: next_cursor continues the window (sent
// alone), its figures those of the first page.
func (m *Module) listApp(w http.ResponseWriter, r *http.Request) error {
	app, err := sidecar.PathID(r, "app_name")
	if err != nil {
		return err
	}
	qs := r.URL.Query()
	var ans appListAnswer
	var c appCursor
	if cur := qs.Get("cursor"); cur != "" {
		var ok bool
		if c, ok = decodeAppCursor(cur, m.store.layout().Buckets()); !ok {
			return sidecar.NotACursor()
		}
		for _, p := range []string{"limit", "offset", "page", "order"} {
			if qs.Get(p) != "" {
				return sidecar.BadRequest("invalid_query", "cursor continues a listing: send it without %s", p)
			}
		}
		ans.listAnswer = listAnswer{Sessions: []listed{}, Page: c.page, Limit: c.limit, TotalItems: c.total, TotalPages: c.pages}
	} else {
		o, err := order(r)
		if err != nil {
			return err
		}
		start, size, _, err := window(r, 0)
		if err != nil {
			return err
		}
		total, err := m.store.AppTotal(r.Context(), app)
		if err != nil {
			return err
		}
		c = appCursor{order: cmp.Or(o, OrderCreated), remaining: size}
		if size == 0 {
			_, _, ans.listAnswer, _ = window(r, total)
			sidecar.WriteJSON(w, http.StatusOK, ans)
			return nil
		}
		var got []AppListed
		var gone int
		got, c.ranks, gone, err = m.store.ListApp(r.Context(), app, c.order, nil, start, size)
		if err != nil {
			return err
		}
		_, _, ans.listAnswer, _ = window(r, max(total-gone, 0))
		c.page, c.limit, c.total, c.pages = ans.Page, ans.Limit, ans.TotalItems, ans.TotalPages
		return m.writeApp(w, app, ans, c, got)
	}
	got, ranks, _, err := m.store.ListApp(r.Context(), app, c.order, c.ranks, 0, c.remaining)
	if err != nil {
		return err
	}
	c.ranks = ranks
	return m.writeApp(w, app, ans, c, got)
}

// writeApp writes a page across users and the cursor after it, if any.
func (m *Module) writeApp(w http.ResponseWriter, app string, ans appListAnswer, c appCursor, got []AppListed) error {
	for _, l := range got {
		ans.Sessions = append(ans.Sessions, listed{ID: l.ID, AppName: app, UserID: l.User, SidecarSessionID: SidecarSession(app, l.ID),
			LastUpdateTime: json.RawMessage(cmp.Or(l.LastUpdate, "0"))})
	}
	if c.remaining > 0 {
		c.remaining -= len(got)
	}
	if c.ranks != nil && c.remaining != 0 {
		next := c.encode()
		ans.NextCursor = &next
	}
	sidecar.WriteJSON(w, http.StatusOK, ans)
	return nil
}

// cmpTimes orders by time, then by id (ADK compares ids with localeCompare;
// plain byte order here).
func cmpTimes(a, b float64, ida, idb string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return strings.Compare(ida, idb)
}

func (m *Module) delete(w http.ResponseWriter, r *http.Request) error {
	app, user, session, err := ids(r, true)
	if err != nil {
		return err
	}
	if err := m.store.Delete(r.Context(), app, user, session); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type appendRequest struct {
	Event          json.RawMessage            `json:"event"`
	LastUpdateTime json.RawMessage            `json:"last_update_time"`
	StateDelta     map[string]json.RawMessage `json:"state_delta"`
}

type appendAnswer struct {
	Index          int64           `json:"index"`
	Replaced       bool            `json:"replaced"`
	LastUpdateTime json.RawMessage `json:"last_update_time"`
}

// number is raw when it is a finite JSON number (null unmarshals into a
// float64 without an error: refused here, the scripts compare numbers).
func number(field string, raw json.RawMessage) (string, error) {
	var f float64
	if len(raw) == 0 || raw[0] == '"' || string(raw) == "null" || json.Unmarshal(raw, &f) != nil {
		return "", sidecar.BadRequest("invalid_field", "field %q must be a number", field)
	}
	return string(raw), nil
}

func (m *Module) appendEvent(w http.ResponseWriter, r *http.Request) error {
	app, user, session, err := ids(r, true)
	if err != nil {
		return err
	}
	var req appendRequest
	if err := sidecar.DecodeJSON(r, &req); err != nil {
		return err
	}
	var ev map[string]json.RawMessage
	if len(req.Event) == 0 || json.Unmarshal(req.Event, &ev) != nil || ev == nil {
		return sidecar.BadRequest("invalid_field", "field \"event\" must be a JSON object (an ADK Event)")
	}
	if len(req.Event) > m.cfg.MaxEventBytes {
		return sidecar.BadRequest("invalid_field", "field \"event\" is %d bytes; at most %d (ADK_MAX_EVENT_BYTES)", len(req.Event), m.cfg.MaxEventBytes)
	}
	ts, err := number("event.timestamp", ev["timestamp"])
	if err != nil {
		return err
	}
	last, err := number("last_update_time", req.LastUpdateTime)
	if err != nil {
		return err
	}
	id := ""
	if raw, ok := ev["id"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &id) != nil || len(id) > MaxKeyBytes {
			return sidecar.BadRequest("invalid_field", "field \"event.id\" must be a string of at most %d bytes", MaxKeyBytes)
		}
	}
	if err := checkState("state_delta", req.StateDelta); err != nil {
		return err
	}
	a, err := m.store.Append(r.Context(), app, user, session, last, ts, id, req.Event, newDelta(req.StateDelta))
	if err != nil {
		return err
	}
	sidecar.WriteJSON(w, http.StatusCreated, appendAnswer{Index: a.Index, Replaced: a.Replaced, LastUpdateTime: json.RawMessage(ts)})
	return nil
}
