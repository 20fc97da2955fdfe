package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// TestKeyspace drives every route of every module the product ships against
// a real Redis and a real 3-master Redis Cluster, then scans the whole
// keyspace: every key must belong to exactly one family of
// redisstore.Families(), be of its family's type, and carry a TTL unless its
// family is Permanent or a TemporaryException; every key family must occur
// (so the drive reaches them all), each with the TTL it promises. A module
// that writes a key the layout does not name, or forgets its TTL, fails
// here.
func TestKeyspace(t *testing.T) {
	t.Run(redisstoretest.Real, func(t *testing.T) { checkKeyspace(t, redisstoretest.NewReal(t)) })
	t.Run(redisstoretest.ClusterBackend, func(t *testing.T) { checkKeyspace(t, redisstoretest.NewClusterServer(t)) })
}

func checkKeyspace(t *testing.T, srv *redisstoretest.Server) {
	h := sidecartest.Start(t, srv, nil, modules.All()...)
	driveEveryRoute(t, h)
	if t.Failed() {
		t.FailNow()
	}
	l := srv.Layout()
	keys := scanKeyspace(t, srv)
	problems, seen := auditKeys(l, keys)
	for _, p := range problems {
		t.Error(p)
	}
	for _, f := range redisstore.Families() {
		s := seen[f.Name]
		switch {
		case f.Kind == redisstore.KindChannel:
			continue
		case s.keys == 0:
			t.Errorf("family %q (%s): no key in Redis after driving every route", f.Name, l.Glob(f))
		case (f.TTL == redisstore.SessionTTL || f.TTL == redisstore.LockTTL || f.TTL == redisstore.RetentionTTL) && s.withTTL == 0:
			t.Errorf("family %q: %d keys, none with a TTL, want %s", f.Name, s.keys, f.TTL)
		case f.TTL == redisstore.TemporaryException && s.withoutTTL == 0:
			t.Errorf("family %q is a temporary exception, yet all its %d keys have a TTL: the defect is fixed, make its policy the TTL it now has", f.Name, s.keys)
		}
	}
	t.Logf("%d keys in %d families", len(keys), len(seen))

	// Channels: every channel a sidecar subscribes to is a family's. The
	// locks module subscribes in the background once Redis is ready, the
	// events module to a stream's channel while a client watches it (one
	// is kept open here): wait for their subscriptions to show (a
	// condition, not a time limit).
	sctx, stopStream := context.WithCancel(t.Context())
	defer stopStream()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, h.API+"/v1/users/alice/sessions/chat-1/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET .../events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var chans []string
	want := 0
	for _, f := range redisstore.Families() {
		if f.Kind == redisstore.KindChannel {
			want++
		}
	}
	for range 200 {
		if chans = channels(t, srv); len(chans) >= want {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	for _, c := range chans {
		if f, ok := l.Match(c); !ok || f.Kind != redisstore.KindChannel {
			t.Errorf("Pub/Sub channel %q is no channel family of the keyspace", c)
		}
	}
	for _, f := range redisstore.Families() {
		if f.Kind == redisstore.KindChannel && !slices.ContainsFunc(chans, func(c string) bool { m, _ := l.Match(c); return m.Name == f.Name }) {
			t.Errorf("channel family %q: no subscriber (PUBSUB CHANNELS %v)", f.Name, chans)
		}
	}

	// Each family's glob, as docs/keyspace.md gives it for redis-cli --scan
	// --pattern, finds exactly the keys of the family in Redis (the lock
	// family's "*" finds them all).
	for _, f := range redisstore.Families() {
		if f.Kind == redisstore.KindChannel || l.Glob(f) == "*" {
			continue
		}
		var want []string
		for _, k := range keys {
			if m, ok := l.Match(k.key); ok && m.Name == f.Name {
				want = append(want, k.key)
			}
		}
		if got := scanKeys(t, srv, l.Glob(f)); !slices.Equal(got, want) {
			t.Errorf("family %q: SCAN MATCH %s finds %q, want its keys %q", f.Name, l.Glob(f), got, want)
		}
	}

	// The audit catches a key the layout does not name, a key of the wrong
	// type, and a missing TTL, on the same scan of the same Redis.
	t.Run("strays are reported", func(t *testing.T) {
		c := srv.Client(t)
		rec := l.Session("carol", "stray").Record
		meta := locks.KeysOf("orphan_lock").Meta
		strays := map[string]rueidis.Completed{
			"myapp:cache:1": c.B().Set().Key("myapp:cache:1").Value("x").ExSeconds(600).Build(),         // no family
			"orphan_lock":   c.B().Set().Key("orphan_lock").Value("x").Build(),                          // a lock without a TTL
			rec:             c.B().Hset().Key(rec).FieldValue().FieldValue("status", "running").Build(), // a record without a TTL
			meta:            c.B().Set().Key(meta).Value("x").ExSeconds(600).Build(),                    // a string, not a hash
		}
		for k, cmd := range strays {
			if err := c.Do(t.Context(), cmd).Error(); err != nil {
				t.Fatalf("write %s: %v", k, err)
			}
		}
		problems, _ := auditKeys(l, scanKeyspace(t, srv))
		for k := range strays {
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, fmt.Sprintf("%q", k)) }) {
				t.Errorf("stray key %q: not reported; the audit said %q", k, problems)
			}
		}
		if len(problems) != len(strays) {
			t.Errorf("%d problems after writing %d strays, want one each: %q", len(problems), len(strays), problems)
		}
	})
}

// driveEveryRoute calls every operation of openapi.json with its examples,
// for every family of keys: a session with every key and its own TTL
// (alice/chat-1, completed), a failed one (chat-2), a deleted one (chat-3),
// one whose only entry was deleted (bob/notes), the listings that run the
// expiry sweep, a lock taken, refreshed and released, and one left held.
// Then it checks that every route of every module answered a 2xx at least
// once, so a new route cannot be left out.
// watchAlice keeps the event streams of user alice and of her session
// chat-1 (made by a drive's first step) watched on h until the test ends:
// SESSION_EVENTS=watched records only watched streams, and the drive's
// stream examples resume with after=0, wanting the events of its writes.
func watchAlice(t *testing.T, h *sidecartest.Host) {
	t.Helper()
	for _, path := range []string{"/v1/users/alice/events", "/v1/users/alice/sessions/chat-1/events"} {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.API+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %v %v", path, resp, err)
		}
		// read (and drop) its frames, so the stream never stalls on a full
		// connection
		go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
		t.Cleanup(func() { resp.Body.Close() })
	}
}

func driveEveryRoute(t *testing.T, h *sidecartest.Host) {
	t.Helper()
	d := openapiDoc(t)
	chat2 := map[string]string{"session_id": "chat-2"}
	chat3 := map[string]string{"session_id": "chat-3"}
	bob := map[string]string{"user_id": "bob", "session_id": "notes"}
	held := map[string]string{"name": "held_lock"}
	reg1 := map[string]string{"session_id": "reg-1"}
	dana := map[string]string{"user_id": "dana"}
	msg1 := map[string]string{"session_id": "msg-1"}
	msg1m2 := map[string]string{"session_id": "msg-1", "message_id": "m2"}
	msg2 := map[string]string{"session_id": "msg-2"}
	var lockToken string
	steps := []struct {
		id     string
		status int
		path   map[string]string
		body   func() string // nil = the example
	}{
		{"appendEntry", 201, nil, nil},
		// alice searches early: under SEARCH_INDEX=on-demand (the default)
		// the search builds her index and her writes from then on keep it,
		// so the drive meets every search family and script
		{"searchUser", 200, nil, nil},
		{"appendEntry", 200, nil, nil},
		{"listEntries", 200, nil, nil},
		{"getEntry", 200, nil, nil},
		{"updateEntry", 200, nil, nil},
		{"setFeedback", 200, nil, nil},
		{"clearFeedback", 200, nil, nil},
		{"searchEntries", 200, nil, nil},
		{"appendTrace", 201, nil, nil},
		{"listTraces", 200, nil, nil},
		{"appendContext", 201, nil, nil},
		{"appendContext", 201, nil, func() string { return `{"id":"pref-2","text":"prefers tea"}` }},
		{"listContext", 200, nil, nil},
		{"updateContext", 200, nil, nil},
		{"deleteContext", 204, nil, nil}, // pref-2 stays
		{"getSessionTTL", 200, nil, nil},
		{"setSessionTTL", 200, nil, nil},
		{"getSession", 200, nil, nil},
		{"recordUsage", 201, nil, nil},
		{"recordUsage", 200, nil, nil}, // same Idempotency-Key
		{"completeSession", 200, nil, nil},
		{"recordUsage", 201, chat2, nil},
		{"failSession", 200, chat2, nil},
		{"appendEntry", 201, chat3, nil},
		{"deleteSession", 204, chat3, nil},
		{"appendEntry", 201, bob, nil},
		{"deleteEntry", 204, bob, nil},
		{"listUserSessions", 200, nil, nil},
		{"listSessions", 200, nil, nil},
		{"getSessionStats", 200, nil, nil},
		{"getCostByModel", 200, nil, nil},
		{"acquireLock", 200, nil, nil},
		{"inspectLock", 200, nil, nil},
		{"refreshLock", 200, nil, func() string { return `{"token":"` + lockToken + `","ttl_ms":30000}` }},
		{"releaseLock", 200, nil, func() string { return `{"token":"` + lockToken + `"}` }},
		{"acquireLock", 200, held, func() string { return `{"owner":"keyspace-test","ttl_ms":600000}` }},
		{"createSession", 201, nil, func() string { return `{"session_id":"reg-1","title":"t","metadata":{"team":"a"}}` }},
		{"updateSession", 200, reg1, func() string { return `{"title":"t2","metadata":{"env":"x"}}` }},
		{"patchSessionState", 200, reg1, func() string { return `{"step":1}` }},
		{"getSessionState", 200, reg1, nil},
		{"patchUserState", 200, nil, func() string { return `{"lang":"en"}` }},
		{"getUserState", 200, nil, nil},
		{"startSession", 201, dana, func() string { return `{"title":"hello","metadata":{"agent":"a1"}}` }},
		{"startSession", 200, dana, func() string { return `{"title":"hello","metadata":{"agent":"a1"}}` }},
		{"endActiveSession", 200, dana, func() string { return `{"summary":"done"}` }},
		{"appendMessages", 201, msg1, nil},
		{"putMessage", 201, msg1m2, nil},
		{"listMessages", 200, msg1, nil},
		{"forkSession", 201, msg1, nil},
		{"splitSession", 201, map[string]string{"session_id": "chat-1-fork"}, nil},
		{"getMessage", 200, msg1, nil},
		{"listChildren", 200, msg1, nil},
		{"patchMessage", 200, msg1, nil},
		{"popMessage", 200, msg1, nil},
		{"deleteMessage", 204, msg1, nil},
		{"applyMessageTransaction", 201, msg1, nil},
		{"appendMessages", 201, msg1, nil}, // the key's messages are gone: stored again
		{"createCompaction", 201, msg1, nil},
		{"listCompactions", 200, msg1, nil},
		{"searchUser", 200, nil, nil},
		{"appendMessages", 201, msg2, nil},
		{"clearMessages", 204, msg2, nil},
		// blocks: every key family of the module (the user's, the session's,
		// the frozen prompt, the tool call ids) left in place
		{"putUserBlock", 201, nil, nil},
		{"appendUserBlock", 200, nil, nil},
		{"getUserBlock", 200, nil, nil},
		{"listUserBlocks", 200, nil, nil},
		{"putSessionBlock", 201, reg1, nil},
		{"appendSessionBlock", 200, reg1, nil},
		{"getSessionBlock", 200, reg1, nil},
		{"listSessionBlocks", 200, reg1, nil},
		{"getSystemPrompt", 200, reg1, nil},
		{"refreshSystemPrompt", 200, reg1, nil},
		{"listTools", 200, reg1, nil},
		{"callTool", 200, reg1, nil},
		{"mcp", 200, reg1, nil},
		{"deleteSessionBlock", 204, reg1, nil},
		{"deleteUserBlock", 204, nil, nil},
		{"putSessionBlock", 201, reg1, nil},
		{"putUserBlock", 201, nil, nil},
		{"publishSessionEvent", 201, nil, nil},
		{"getSessionEvents", 200, nil, nil},
		{"getUserEvents", 200, nil, nil},
		{"requestAbort", 202, reg1, nil},
		{"clearAbort", 204, reg1, nil},
		// erin's erasure leaves its progress key (30 s, named by a hash)
		{"appendEntry", 201, map[string]string{"user_id": "erin"}, nil},
		{"eraseUser", 200, map[string]string{"user_id": "erin"}, nil},
		// checkpoints: both families of a LangGraph thread left in place
		{"putCheckpoint", 200, nil, nil},
		{"putCheckpointWrites", 200, nil, nil},
		{"getCheckpointTuple", 200, nil, nil},
		{"listCheckpoints", 200, nil, nil},
		// adk: the session's, the user's and the app's keys left in place
		{"createAdkSession", 201, nil, nil},
		{"appendAdkEvent", 201, nil, nil},
		{"getAdkSession", 200, nil, nil},
		{"listAdkSessions", 200, nil, nil},
		{"listAdkAppSessions", 200, nil, nil},
		{"createAdkSession", 201, nil, func() string { return `{"session_id":"adk-2"}` }},
		{"deleteAdkSession", 204, map[string]string{"session_id": "adk-2"}, nil},
	}
	for i, s := range steps {
		o, ok := d.Op(s.id)
		if !ok {
			t.Fatalf("no operation %s in openapi.json", s.id)
		}
		c := call{op: o, path: s.path, status: s.status}
		if s.body != nil {
			c.body = s.body()
		}
		rep := do(t, d, h, c)
		if i == 0 {
			watchAlice(t, h)
		}
		if s.id == "acquireLock" && s.path == nil {
			var g struct{ Token string }
			rep.JSON(t, &g)
			lockToken = g.Token
		}
	}
	driveStages(t, h)

	served := servedRoutes(t, h)
	for _, p := range modulePatterns(t, h.Conn) {
		if !served[p] {
			t.Errorf("route %q: never answered a 2xx; add it to driveEveryRoute", p)
		}
	}
}

// servedRoutes are the route patterns the host answered with a 2xx, from
// its sidecar_http_requests_total.
func servedRoutes(t *testing.T, h *sidecartest.Host) map[string]bool {
	t.Helper()
	mfs, err := h.Host.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "sidecar_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var route, code string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "route":
					route = lp.GetValue()
				case "code":
					code = lp.GetValue()
				}
			}
			if strings.HasPrefix(code, "2") && m.GetCounter().GetValue() > 0 {
				out[route] = true
			}
		}
	}
	return out
}

// modulePatterns are the ServeMux patterns of every module the product
// ships, from their Routes().
func modulePatterns(t *testing.T, conn *redisstore.Conn) []string {
	t.Helper()
	var out []string
	for _, rt := range moduleRoutes(t, conn) {
		out = append(out, rt.Pattern)
	}
	return out
}

// defaultLimits are the shared settings a host hands its modules when
// nothing is set.
func defaultLimits(t *testing.T) sidecar.Limits {
	t.Helper()
	cfg, err := sidecar.LoadConfig(envconf.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Limits
}

// moduleRoutes is every route of every module the product ships.
func moduleRoutes(t *testing.T, conn *redisstore.Conn) []sidecar.Route {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	var out []sidecar.Route
	for _, f := range modules.All() {
		m, err := f.New(ctx, sidecar.Deps{Redis: conn, Logger: logger, Env: envconf.Env{}, Registerer: prometheus.NewRegistry(), Limits: defaultLimits(t)})
		if err != nil {
			t.Fatalf("module %s: %v", f.Name, err)
		}
		out = append(out, m.Routes()...)
		if c, ok := m.(sidecar.Closer); ok {
			if err := c.Close(ctx); err != nil {
				t.Errorf("module %s: close: %v", f.Name, err)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no routes")
	}
	return out
}

// keyInfo is one key found by SCAN.
type keyInfo struct {
	key, typ string
	pttl     int64 // -1: no TTL
}

// maxScanRounds bounds the SCAN loop of one node (COUNT 1000 each).
const maxScanRounds = 10000

// scanKeyspace returns every key of srv (of every master on a cluster),
// with its type and PTTL.
func scanKeyspace(t *testing.T, srv *redisstoretest.Server) []keyInfo {
	t.Helper()
	ctx := t.Context()
	c := srv.Client(t)
	keys := scanKeys(t, srv, "*")
	out := make([]keyInfo, len(keys))
	for i, k := range keys {
		res := c.DoMulti(ctx, c.B().Type().Key(k).Build(), c.B().Pttl().Key(k).Build())
		typ, err := res[0].ToString()
		if err != nil {
			t.Fatalf("TYPE %s: %v", k, err)
		}
		pttl, err := res[1].AsInt64()
		if err != nil {
			t.Fatalf("PTTL %s: %v", k, err)
		}
		out[i] = keyInfo{key: k, typ: typ, pttl: pttl}
	}
	return out
}

// scanKeys returns the keys of srv (of every master on a cluster) that
// match the glob, sorted: SCAN MATCH glob COUNT 1000, as redis-cli --scan
// --pattern does, in at most maxScanRounds rounds per node.
func scanKeys(t *testing.T, srv *redisstoretest.Server, glob string) []string {
	t.Helper()
	ctx := t.Context()
	scanNode := func(do func(cursor uint64) rueidis.RedisResult) []string {
		var keys []string
		var cursor uint64
		for range maxScanRounds {
			e, err := do(cursor).AsScanEntry()
			if err != nil {
				t.Fatalf("SCAN: %v", err)
			}
			keys = append(keys, e.Elements...)
			if e.Cursor == 0 {
				return keys
			}
			cursor = e.Cursor
		}
		t.Fatalf("SCAN did not finish in %d rounds", maxScanRounds)
		return nil
	}
	var keys []string
	if srv.Cluster != nil {
		masters, err := srv.Cluster.Masters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, addr := range masters {
			keys = append(keys, scanNode(func(cursor uint64) rueidis.RedisResult {
				return srv.Cluster.Do(ctx, addr, "SCAN", strconv.FormatUint(cursor, 10), "MATCH", glob, "COUNT", "1000")
			})...)
		}
	} else {
		c := srv.Client(t)
		keys = scanNode(func(cursor uint64) rueidis.RedisResult {
			return c.Do(ctx, c.B().Scan().Cursor(cursor).Match(glob).Count(1000).Build())
		})
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// familySeen counts a family's keys in a scan.
type familySeen struct{ keys, withTTL, withoutTTL int }

// auditKeys checks each key against the layout: one family, its type, and
// a TTL unless the family may go without. It returns one line per problem
// (naming the key, quoted) and the counts per family.
func auditKeys(l redisstore.Layout, keys []keyInfo) ([]string, map[string]familySeen) {
	var problems []string
	seen := map[string]familySeen{}
	for _, k := range keys {
		fams := l.MatchAll(k.key)
		if len(fams) != 1 {
			var names []string
			for _, f := range fams {
				names = append(names, f.Name)
			}
			problems = append(problems, fmt.Sprintf("key %q (%s) matches %d families %v of the keyspace, want exactly one (redisstore.Families())", k.key, k.typ, len(fams), names))
			continue
		}
		f := fams[0]
		s := seen[f.Name]
		s.keys++
		if k.pttl > 0 {
			s.withTTL++
		} else {
			s.withoutTTL++
		}
		seen[f.Name] = s
		if k.typ != string(f.Kind) {
			problems = append(problems, fmt.Sprintf("key %q is a %s, its family %q holds %s", k.key, k.typ, f.Name, f.Kind))
			continue
		}
		if k.pttl <= 0 && f.TTL != redisstore.Permanent && f.TTL != redisstore.TemporaryException {
			problems = append(problems, fmt.Sprintf("key %q (family %q) has no TTL (PTTL %d), its policy is %s", k.key, f.Name, k.pttl, f.TTL))
		}
	}
	return problems, seen
}

// channels lists the Pub/Sub channels with a subscriber (on every node of
// a cluster).
func channels(t *testing.T, srv *redisstoretest.Server) []string {
	t.Helper()
	var out []string
	if srv.Cluster != nil {
		for _, addr := range srv.Cluster.Addrs() {
			cs, err := srv.Cluster.Do(t.Context(), addr, "PUBSUB", "CHANNELS").AsStrSlice()
			if err != nil {
				t.Fatalf("PUBSUB CHANNELS on %s: %v", addr, err)
			}
			out = append(out, cs...)
		}
	} else {
		c := srv.Client(t)
		cs, err := c.Do(t.Context(), c.B().PubsubChannels().Build()).AsStrSlice()
		if err != nil {
			t.Fatalf("PUBSUB CHANNELS: %v", err)
		}
		out = cs
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// driveStages runs the staged writes (messages/stage.go): a big append, a
// big append_items in parts and a big replace_history run to their commit
// on session stg-1, a replace_history whose writer stops after its first
// put (its staged keys left to their TTL, as after a kill) on stg-2, and
// an operation in parts its writer drops on stg-3.
func driveStages(t *testing.T, h *sidecartest.Host) {
	t.Helper()
	batch := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"%s%d","role":"user","content":"staged %d"}`, prefix, i, i)
		}
		return b.String()
	}
	const s = "/v1/users/alice/sessions/stg-1/messages"
	for _, r := range []struct{ path, body string }{
		{s, `{"messages":[` + batch("a", 101) + `]}`},
		{s + "/transactions", `{"operation_id":"p","type":"append_items","part":0,"more":true,"messages":[` + batch("b", 2) + `]}`},
		{s + "/transactions", `{"operation_id":"p","type":"append_items","part":1,"messages":[` + batch("c", 2) + `]}`},
		{s + "/transactions", `{"operation_id":"w","type":"replace_history","messages":[` + batch("a", 101) + `]}`},
	} {
		if rep := h.Do(t, "POST", r.path, r.body); rep.Status != 201 && rep.Status != 202 {
			t.Fatalf("POST %s: %s", r.path, rep)
		}
	}
	st := sessionstore.New(h.Conn, sessionstore.Config{TTLSeconds: 3600})
	run := func(script, session string, args ...string) lua.Reply {
		t.Helper()
		r, err := st.Run(t.Context(), lua.Named(script), "alice", session, args...)
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		return r
	}
	open := run("messages_stage_open", "stg-2", "gone", "5000", "0", "", "whole", "", "10000", "2",
		"tx w2", "1000000", "d", "x0", "f", "x1", "f")
	created, _ := open.String(4)
	run("messages_stage_put", "stg-2", "gone", "5000", "0", "10000",
		"x0", "f", "1", `{"id":"x0","role":"user","content":"x","parent_id":null,"created_at":`+created+`}`)
	// an operation in parts its writer gives up: its stage dropped
	if rep := h.Do(t, "POST", "/v1/users/alice/sessions/stg-3/messages/transactions",
		`{"operation_id":"q","type":"append_items","part":0,"more":true,"messages":[`+batch("d", 2)+`]}`); rep.Status != 202 {
		t.Fatalf("a part: %s", rep)
	}
	run("messages_stage_drop", "stg-3", "tx q", "500")
}
