package adk_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/adk"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
)

func start(t testing.TB, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	return sidecartest.Start(t, srv, env, sessions.Factory, ttl.Factory, adk.Factory)
}

const app = "/v1/adk/apps/weather/users/alice/sessions"

type session struct {
	ID             string                     `json:"id"`
	AppName        string                     `json:"app_name"`
	UserID         string                     `json:"user_id"`
	State          map[string]json.RawMessage `json:"state"`
	Events         []map[string]any           `json:"events"`
	LastUpdateTime float64                    `json:"last_update_time"`
	EventCount     int                        `json:"event_count"`
	NextCursor     *string                    `json:"next_cursor"`
}

func want(t testing.TB, rep sidecartest.Reply, status int) session {
	t.Helper()
	if rep.Status != status {
		t.Fatalf("got %s, want %d", rep, status)
	}
	var s session
	if status < 300 && rep.Body != "" {
		rep.JSON(t, &s)
	}
	return s
}

func event(id string, ts float64, text string) string {
	return fmt.Sprintf(`{"id":%q,"author":"model","timestamp":%v,"content":{"parts":[{"text":%q}]}}`, id, ts, text)
}

func appendBody(id string, ts, last float64, delta string) string {
	return fmt.Sprintf(`{"event":%s,"last_update_time":%v,"state_delta":%s}`, event(id, ts, "said "+id), last, delta)
}

func state(s session) string {
	b, _ := json.Marshal(s.State)
	return string(b)
}

// A session's life as ADK sees it: create with state (app: and user: keys
// taken out, temp: dropped), events appended with their deltas, the merged
// state, the same event id replaced in place, the stale check refusing the
// whole append, and every state seen by another session of the user and of
// another user.
func TestSessionLife(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		s := want(t, h.Do(t, "POST", app, `{"session_id":"s1","state":{"k":1,"app:motd":"hi","user:name":"Al","temp:x":true}}`), 201)
		if s.ID != "s1" || s.AppName != "weather" || s.UserID != "alice" || s.EventCount != 0 || len(s.Events) != 0 {
			t.Fatalf("created %+v", s)
		}
		if got := state(s); got != `{"app:motd":"hi","k":1,"user:name":"Al"}` {
			t.Fatalf("state %s", got)
		}
		want(t, h.Do(t, "POST", app, `{"session_id":"s1"}`), 409)
		last := s.LastUpdateTime
		ev := app + "/s1/events"
		rep := h.Do(t, "POST", ev, appendBody("e1", last+1, last, `{"k":2,"n":null,"temp:t":1,"user:name":"Bo","app:count":[1]}`))
		if rep.Status != 201 || !strings.Contains(rep.Body, `"index":0`) {
			t.Fatalf("append: %s", rep)
		}
		// stale: the caller's copy predates the stored update; nothing written
		keys := adkKeys(srv, "weather", "alice", "s1")
		c := srv.Client(t)
		before := redisstoretest.Snapshot(t, c, keys...)
		rep = h.Do(t, "POST", ev, appendBody("e2", last+2, last, `{"k":3}`))
		if rep.Status != 409 || rep.Code() != "stale_session" {
			t.Fatalf("stale append: %s", rep)
		}
		if after := redisstoretest.Snapshot(t, c, keys...); !slices.Equal(after, before) {
			t.Fatalf("a refused append changed Redis:\n%v\n%v", before, after)
		}
		want(t, h.Do(t, "POST", ev, appendBody("e2", last+2, last+1, `{"k":3}`)), 201)
		// the same id again replaces the event in place
		rep = h.Do(t, "POST", ev, appendBody("e1", last+3, last+2, `{}`))
		if rep.Status != 201 || !strings.Contains(rep.Body, `"replaced":true`) || !strings.Contains(rep.Body, `"index":0`) {
			t.Fatalf("replace: %s", rep)
		}
		g := want(t, h.Do(t, "GET", app+"/s1", ""), 200)
		if got := state(g); got != `{"app:count":[1],"app:motd":"hi","k":3,"n":null,"user:name":"Bo"}` {
			t.Fatalf("state after appends %s", got)
		}
		if g.EventCount != 2 || len(g.Events) != 2 || g.Events[0]["id"] != "e1" || g.Events[0]["timestamp"] != last+3 || g.Events[1]["id"] != "e2" || g.LastUpdateTime != last+3 {
			t.Fatalf("events %+v last %v", g.Events, g.LastUpdateTime)
		}
		// user: state is the user's of the app; app: state every user's
		s2 := want(t, h.Do(t, "POST", app, `{"session_id":"s2"}`), 201)
		if got := state(s2); got != `{"app:count":[1],"app:motd":"hi","user:name":"Bo"}` {
			t.Fatalf("another session of the user: %s", got)
		}
		b := want(t, h.Do(t, "POST", "/v1/adk/apps/weather/users/bob/sessions", `{"session_id":"s1"}`), 201)
		if got := state(b); got != `{"app:count":[1],"app:motd":"hi"}` {
			t.Fatalf("another user: %s", got)
		}
		o := want(t, h.Do(t, "POST", "/v1/adk/apps/other/users/alice/sessions", `{"session_id":"s9"}`), 201)
		if got := state(o); got != `{}` {
			t.Fatalf("another app: %s", got)
		}
		// another app's name does not reach the session
		want(t, h.Do(t, "GET", "/v1/adk/apps/other/users/alice/sessions/s1", ""), 404)
		want(t, h.Do(t, "POST", "/v1/adk/apps/other/users/alice/sessions/s1/events", appendBody("x", 1e15, 1e15, `{}`)), 404)
		want(t, h.Do(t, "DELETE", "/v1/adk/apps/other/users/alice/sessions/s1", ""), 404)
		want(t, h.Do(t, "DELETE", app+"/s1", ""), 204)
		want(t, h.Do(t, "GET", app+"/s1", ""), 404)
		want(t, h.Do(t, "DELETE", app+"/s1", ""), 404)
	})
}

// adkKeys are the keys an ADK write of app/user/session touches.
func adkKeys(srv *redisstoretest.Server, app, user, session string) []string {
	l := srv.Layout()
	sid := adk.SidecarSession(app, session)
	sk := l.Session(user, sid)
	return []string{
		l.SessionKey(adk.SessionFamily, user, sid), l.SessionKey(adk.StateFamily, user, sid),
		l.SessionKey(adk.EventsFamily, user, sid), l.UserKey(adk.UserStateFamily, user, app),
		l.UserKey(adk.IndexFamily, user, app), l.BucketKey(adk.AppStateFamily, l.Bucket(app), app),
		sk.Record, l.SessionEvents(user, sid),
	}
}

// Every ADK write emits exactly one live event in its own script (create:
// status, append: adk_event carrying the stored event); a refused append
// emits none. (SESSION_EVENTS=always: the stream is written whether or
// not someone watches.)
func TestEvents(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_EVENTS": "always"}) // recorded without a watcher
		s := want(t, h.Do(t, "POST", app, `{"session_id":"s1"}`), 201)
		last := s.LastUpdateTime
		want(t, h.Do(t, "POST", app+"/s1/events", appendBody("e1", last+1, last, `{"k":1}`)), 201)
		want(t, h.Do(t, "POST", app+"/s1/events", appendBody("e2", last+2, last, `{"k":2}`)), 409) // stale
		want(t, h.Do(t, "POST", app+"/s1/events", appendBody("e1", last+2, last+1, `{}`)), 201)    // replaced
		got := redisstoretest.StreamEvents(t, srv.Client(t), srv.Layout().SessionEvents("alice", "weather.s1"))
		var types []string
		for _, e := range got {
			types = append(types, e.Type)
		}
		if !slices.Equal(types, []string{"status", "adk_event", "adk_event"}) {
			t.Fatalf("events %v", types)
		}
		if got[1].Data["id"] != "e1" || got[2].Data["timestamp"] != last+2 {
			t.Fatalf("adk_event data %v, %v", got[1].Data, got[2].Data)
		}
	})
}
