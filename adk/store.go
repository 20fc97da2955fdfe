package adk

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// maxKeys is MaxStateKeys as the scripts get it.
var maxKeys = strconv.Itoa(MaxStateKeys)

// Store runs the module's scripts over the shared session runner.
type Store struct {
	*sessionstore.Store
	cfg       Config
	maxAnswer int // SIDECAR_MAX_ANSWER_BYTES: a page of events is cut before it
}

func (s *Store) layout() redisstore.Layout { return redisstore.Layout{Cluster: s.Conn().Cluster()} }

// appKey is the app state's key, and the key a session script gets for it:
// the key itself on standalone Redis, "" on Cluster (another slot).
func (s *Store) appKey(app string) (key, inScript string) {
	l := s.layout()
	key = l.BucketKey(AppStateFamily, l.Bucket(app), app)
	if l.Cluster {
		return key, ""
	}
	return key, key
}

// delta is a state delta split by ADK's prefixes (temp: keys dropped).
type delta struct {
	args []string // the scripts' triples: scope, key, JSON value
	app  []string // the app: pairs (key without the prefix, value)
}

// newDelta splits state by ADK's prefixes, in key order.
func newDelta(state map[string]json.RawMessage) delta {
	var d delta
	for _, k := range sortedKeys(state) {
		v := string(state[k])
		switch scope, key := split(k); scope {
		case "t":
		case "a":
			d.app = append(d.app, key, v)
			d.args = append(d.args, scope, key, v)
		default:
			d.args = append(d.args, scope, key, v)
		}
	}
	return d
}

// Create makes the ADK session; it answers the creation time (ms).
func (s *Store) Create(ctx context.Context, app, user, session string, d delta) (string, error) {
	key, in := s.appKey(app)
	args := append([]string{app, in, strconv.Itoa(s.cfg.MaxSessions), strconv.Itoa(s.cfg.MaxStateBytes), maxKeys, session}, d.args...)
	r, err := s.Run(ctx, luaScripts.Create, user, SidecarSession(app, session), args...)
	if err != nil {
		return "", err
	}
	if in == "" && len(d.app) > 0 {
		if err := s.applyApp(ctx, key, d.app); err != nil {
			return "", err
		}
	}
	ms, err := r.String(0)
	return ms, redisstore.Wrap(luaScripts.Create.Name, err)
}

// Appended is what an append did.
type Appended struct {
	Index    int64
	Replaced bool
}

// Append stores event (its id and timestamp given) with its delta, when
// the caller's copy (lastUpdate) is not stale.
func (s *Store) Append(ctx context.Context, app, user, session, lastUpdate, timestamp, id string, event []byte, d delta) (Appended, error) {
	key, in := s.appKey(app)
	args := append([]string{app, in, lastUpdate, timestamp, id, string(event), strconv.Itoa(s.cfg.MaxEvents),
		strconv.Itoa(s.cfg.MaxStateBytes), maxKeys, session}, d.args...)
	r, err := s.Run(ctx, luaScripts.Append, user, SidecarSession(app, session), args...)
	if err != nil {
		return Appended{}, notFound(err, app, user, session)
	}
	var a Appended
	var pending bool
	var errs [3]error
	a.Index, errs[0] = r.Int(0)
	a.Replaced, errs[1] = r.Flag(1)
	pending, errs[2] = r.Flag(2)
	for _, e := range errs {
		if e != nil {
			return a, redisstore.Wrap(luaScripts.Append.Name, e)
		}
	}
	if pending {
		// Cluster: the app state is in another slot, written after the event
		if err := s.applyApp(ctx, key, d.app); err != nil {
			return a, err
		}
	}
	return a, nil
}

// applyApp writes the app: pairs into the app state (Cluster: a script of
// its own in the app's slot). It runs whether or not the caller is still
// there: the event's script has stored the event already.
func (s *Store) applyApp(ctx context.Context, key string, pairs []string) error {
	ctx = context.WithoutCancel(ctx)
	client, err := s.Conn().Client()
	if err != nil {
		return err
	}
	args := append([]string{strconv.Itoa(s.cfg.MaxStateBytes), strconv.Itoa(s.Config().TTLSeconds), maxKeys}, pairs...)
	msg, err := luaScripts.App.Exec(ctx, client, []string{key}, args).ToMessage()
	if err != nil {
		return redisstore.Wrap(luaScripts.App.Name, err)
	}
	_, err = lua.Decode(luaScripts.App.Name, msg)
	return err
}

// Page is a page of an ADK session as adk_read.lua answers it.
type Page struct {
	Created, LastUpdate string
	N                   int64
	Next                string   // the next page's cursor (opaque), "" done
	State, User, App    []string // pairs
	Events              []string // newest first
}

// PageQuery says which page of which events.
type PageQuery struct {
	Cursor         string // adk_read.lua's: "<end>:<low>", "" the first page
	NumRecent      int
	AfterTimestamp string
	Limit          int
}

// Read reads a page of the session (the first with its state).
func (s *Store) Read(ctx context.Context, app, user, session string, q PageQuery) (Page, error) {
	maxBytes, done, err := sidecar.ReserveAnswer(ctx, s.maxAnswer)
	if err != nil {
		return Page{}, err
	}
	size := 0
	defer func() { done(size) }()
	key, in := s.appKey(app)
	r, err := s.Run(ctx, luaScripts.Read, user, SidecarSession(app, session), app, in, q.Cursor, strconv.Itoa(q.NumRecent), q.AfterTimestamp,
		strconv.Itoa(q.Limit), strconv.Itoa(maxBytes))
	if err != nil {
		return Page{}, notFound(err, app, user, session)
	}
	var p Page
	var errs [8]error
	p.Created, errs[0] = r.String(0)
	p.LastUpdate, errs[1] = r.String(1)
	p.N, errs[2] = r.Int(2)
	p.Next, errs[3] = r.String(3)
	p.Next = apiCursor(p.Next)
	p.State, errs[4] = pairsOf(r, 4)
	p.User, errs[5] = pairsOf(r, 5)
	p.App, errs[6] = pairsOf(r, 6)
	for i := 7; i < len(r.Values) && errs[7] == nil; i++ {
		var e string
		e, errs[7] = r.Values[i].ToString()
		p.Events = append(p.Events, e)
		size += len(e) + 1
	}
	for _, e := range errs {
		if e != nil {
			return p, redisstore.Wrap(luaScripts.Read.Name, e)
		}
	}
	if in == "" && q.Cursor == "" {
		if p.App, err = s.appState(ctx, key); err != nil {
			return p, err
		}
	}
	return p, nil
}

// appState reads the app state apart (Cluster) as {key, value, ...}.
func (s *Store) appState(ctx context.Context, key string) ([]string, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return nil, err
	}
	m, err := client.Do(ctx, client.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil && !rueidis.IsRedisNil(err) {
		return nil, redisstore.Wrap("adk app state", err)
	}
	var out []string
	for _, f := range sortedKeys(m) {
		if len(f) > 0 && f[0] == '=' {
			out = append(out, f[1:], m[f])
		}
	}
	return out, nil
}

// Listed is one session of a listing.
type Listed struct {
	ID, LastUpdate string
}

// List reads the user's sessions of app in creation order.
func (s *Store) List(ctx context.Context, app, user string) ([]Listed, error) {
	r, err := s.Run(ctx, luaScripts.List, user, "adk", app, strconv.Itoa(s.cfg.MaxSessions))
	if err != nil {
		return nil, err
	}
	out := make([]Listed, 0, len(r.Values)/2)
	for i := 0; i+1 < len(r.Values); i += 2 {
		id, err1 := r.Values[i].ToString()
		lu, err2 := r.Values[i+1].ToString()
		if err1 != nil || err2 != nil {
			return nil, redisstore.Wrap(luaScripts.List.Name, err1)
		}
		out = append(out, Listed{id, lu})
	}
	return out, nil
}

// Delete removes the whole sidecar session when it is an ADK session of
// app (404 otherwise), then its places in the user's list and the app's
// index (adk_unlist.lua: not when the session was created again since).
func (s *Store) Delete(ctx context.Context, app, user, session string) error {
	client, err := s.Conn().Client()
	if err != nil {
		return err
	}
	sid := SidecarSession(app, session)
	had, err := client.Do(ctx, client.B().Hget().Key(s.layout().SessionKey(SessionFamily, user, sid)).Field("app").Build()).ToString()
	if rueidis.IsRedisNil(err) || (err == nil && had != app) {
		return redisstore.NotFound("no ADK session %s/%s of app %s", user, session, app)
	}
	if err != nil {
		return redisstore.Wrap("adk delete", err)
	}
	if err := s.Store.Delete(ctx, user, sid); err != nil {
		return err
	}
	_, err = s.unlist(ctx, app, user, session)
	return err
}

// unlist takes a gone session out of its user's list and the app's index;
// it reports whether it did (false: the session exists).
func (s *Store) unlist(ctx context.Context, app, user, session string) (bool, error) {
	r, err := s.Run(ctx, luaScripts.Unlist, user, SidecarSession(app, session), app, session)
	if err != nil {
		return false, err
	}
	done, err := r.Flag(0)
	return done, redisstore.Wrap(luaScripts.Unlist.Name, err)
}
