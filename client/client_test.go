package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/client"
	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/openapi"
	"github.com/agentsidecar/agentsidecar/openapi/openapitest"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// recorder is an http.RoundTripper over the default transport that keeps
// every request it sends, so tests can see what the client put on the wire.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (r *recorder) last() *http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

func recording(base string, opts ...client.Option) (*client.Client, *recorder) {
	rec := &recorder{}
	return client.New(base, append([]client.Option{client.WithHTTPClient(&http.Client{Transport: rec})}, opts...)...), rec
}

// must(f()).ok(t) is f's value, failing the test on f's error.
func must[T any](v T, err error) result[T] { return result[T]{v, err} }

type result[T any] struct {
	v   T
	err error
}

func (r result[T]) ok(t *testing.T) T {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.v
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err error, status int, code string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != status || e.Code != code {
		t.Fatalf("got error %v, want %d %s", err, status, code)
	}
}

// TestEveryOperation calls every method on the live sidecar, checks the
// answers (statuses, Created flags, fields), and checks that together the
// calls sent every operation of openapi.json, with its method and path.
func TestEveryOperation(t *testing.T) {
	ctx := t.Context()
	c, rec := recording(sidecarURL)
	const u, s = "t-every", "s1"

	// Entries.
	res := must(c.AppendEntry(ctx, u, s, client.AppendEntryRequest{QAID: "q1", Question: "Where is the dog?", Answer: "In the garden",
		MemifyMetadata: map[string]any{"a": true}})).ok(t)
	if !res.Created || res.QAID != "q1" || res.Context != "" || res.FeedbackScore != nil || res.MemifyMetadata["a"] != true {
		t.Fatalf("append: %+v", res)
	}
	if ts, err := res.Timestamp(); err != nil || time.Since(ts) > time.Minute {
		t.Fatalf("Timestamp of %q: %v, %v", res.Time, ts, err)
	}
	if again := must(c.AppendEntry(ctx, u, s, client.AppendEntryRequest{QAID: "q1", Question: "other", Answer: "other"})).ok(t); again.Created || again.Question != "Where is the dog?" {
		t.Fatalf("retried append: %+v, want the stored entry with Created false", again)
	}
	gen := must(c.AppendEntry(ctx, u, s, client.AppendEntryRequest{Question: "And the cat?", Answer: "On the roof"})).ok(t)
	if !gen.Created || len(gen.QAID) != 36 {
		t.Fatalf("append without qa_id: %+v", gen)
	}
	if l := must(c.ListEntries(ctx, u, s, 0)).ok(t); len(l) != 2 || l[0].QAID != "q1" || l[1].QAID != gen.QAID {
		t.Fatalf("ListEntries: %+v", l)
	}
	if l := must(c.ListEntries(ctx, u, s, 1)).ok(t); len(l) != 1 || l[0].QAID != gen.QAID {
		t.Fatalf("ListEntries last 1: %+v", l)
	}
	if l := must(c.ListEntries(ctx, u, "t-unknown", 0)).ok(t); l == nil || len(l) != 0 {
		t.Fatalf("ListEntries of an unknown session: %#v, want empty", l)
	}
	if e := must(c.GetEntry(ctx, u, s, "q1")).ok(t); e.Answer != "In the garden" {
		t.Fatalf("GetEntry: %+v", e)
	}
	e := must(c.UpdateEntry(ctx, u, s, "q1", client.UpdateEntryRequest{
		Answer:                new("Under the tree"),
		UsedGraphElementIDs:   client.Set(client.GraphElementIDs{NodeIDs: []string{"n1"}}),
		UsedSessionContextIDs: client.Set([]string{"pref-1"}),
		MemifyMetadata:        client.Set(map[string]any{"b": true}),
	})).ok(t)
	if e.Answer != "Under the tree" || e.Question != "Where is the dog?" || e.UsedGraphElementIDs == nil || e.UsedGraphElementIDs.NodeIDs[0] != "n1" ||
		!slices.Equal(e.UsedSessionContextIDs, []string{"pref-1"}) || e.MemifyMetadata["a"] != true || e.MemifyMetadata["b"] != true {
		t.Fatalf("UpdateEntry: %+v", e)
	}
	e = must(c.UpdateEntry(ctx, u, s, "q1", client.UpdateEntryRequest{UsedGraphElementIDs: client.Null[client.GraphElementIDs](), MemifyMetadata: client.Null[map[string]any]()})).ok(t)
	if e.UsedGraphElementIDs != nil || e.MemifyMetadata != nil || e.UsedSessionContextIDs == nil {
		t.Fatalf("UpdateEntry with nulls: %+v", e)
	}
	e = must(c.SetFeedback(ctx, u, s, "q1", client.FeedbackRequest{FeedbackScore: client.Set(4)})).ok(t)
	if e.FeedbackScore == nil || *e.FeedbackScore != 4 || e.FeedbackText != nil {
		t.Fatalf("SetFeedback: %+v", e)
	}
	e = must(c.SetFeedback(ctx, u, s, "q1", client.FeedbackRequest{FeedbackText: client.Set("good"), FeedbackScore: client.Null[int]()})).ok(t)
	if e.FeedbackScore != nil || e.FeedbackText == nil || *e.FeedbackText != "good" {
		t.Fatalf("SetFeedback text, null score: %+v", e)
	}
	if e := must(c.ClearFeedback(ctx, u, s, "q1")).ok(t); e.FeedbackScore != nil || e.FeedbackText != nil {
		t.Fatalf("ClearFeedback: %+v", e)
	}
	if hits := must(c.SearchEntries(ctx, u, s, "TREE dog", 0)).ok(t); len(hits) != 1 || hits[0].QAID != "q1" {
		t.Fatalf("SearchEntries: %+v", hits)
	}
	if hits := must(c.SearchEntries(ctx, u, s, "the", 1)).ok(t); len(hits) != 1 || hits[0].QAID != gen.QAID {
		t.Fatalf("SearchEntries limit 1, newest first: %+v", hits)
	}

	// Traces.
	tr := must(c.AppendTrace(ctx, u, s, client.AppendTraceRequest{OriginFunction: "search_graph", Status: " ok ",
		MethodParams: map[string]any{"top_k": 5}, MethodReturnValue: []any{"a", 1}})).ok(t)
	if len(tr.TraceID) == 0 || tr.Status != "ok" || tr.MethodParams["top_k"] != float64(5) {
		t.Fatalf("AppendTrace: %+v", tr)
	}
	if l := must(c.ListTraces(ctx, u, s, 0)).ok(t); len(l) != 1 || l[0].TraceID != tr.TraceID || l[0].OriginFunction != "search_graph" {
		t.Fatalf("ListTraces: %+v", l)
	}
	_ = must(c.AppendTrace(ctx, u, s, client.AppendTraceRequest{TraceID: "t2", OriginFunction: "answer", Status: "error", ErrorMessage: "boom"})).ok(t)
	if l := must(c.ListTraces(ctx, u, s, 1)).ok(t); len(l) != 1 || l[0].TraceID != "t2" || l[0].ErrorMessage != "boom" {
		t.Fatalf("ListTraces last 1: %+v", l)
	}

	// Context.
	cr := must(c.AppendContext(ctx, u, s, client.ContextEntry{"id": "pref-1", "text": "metric units"})).ok(t)
	if !cr.Created || cr.ID() != "pref-1" || cr.ContextEntry["text"] != "metric units" {
		t.Fatalf("AppendContext: %+v", cr)
	}
	if cr := must(c.AppendContext(ctx, u, s, client.ContextEntry{"id": "pref-1", "text": "other"})).ok(t); cr.Created || cr.ContextEntry["text"] != "metric units" {
		t.Fatalf("repeated AppendContext: %+v, want the stored entry with Created false", cr)
	}
	if cr := must(c.AppendContext(ctx, u, s, client.ContextEntry{"n": 1})).ok(t); !cr.Created || cr.ID() == "" {
		t.Fatalf("AppendContext without id: %+v", cr)
	}
	if l := must(c.ListContext(ctx, u, s)).ok(t); len(l) != 2 || l[0].ID() != "pref-1" {
		t.Fatalf("ListContext: %+v", l)
	}
	if ce := must(c.UpdateContext(ctx, u, s, "pref-1", client.ContextEntry{"text": "imperial", "k": "v"})).ok(t); ce["text"] != "imperial" || ce["k"] != "v" || ce.ID() != "pref-1" {
		t.Fatalf("UpdateContext: %+v", ce)
	}
	mustNil(t, c.DeleteContext(ctx, u, s, "pref-1"))
	wantErr(t, c.DeleteContext(ctx, u, s, "pref-1"), 404, "not_found")

	// TTL.
	if ttl := must(c.GetSessionTTL(ctx, u, s)).ok(t); ttl.TTLSeconds <= 0 {
		t.Fatalf("GetSessionTTL: %+v", ttl)
	}
	if ttl := must(c.SetSessionTTL(ctx, u, s, 3600)).ok(t); ttl.TTLSeconds != 3600 {
		t.Fatalf("SetSessionTTL: %+v", ttl)
	}
	if ttl := must(c.SetSessionTTL(ctx, u, s, 0)).ok(t); ttl.TTLSeconds != -1 {
		t.Fatalf("SetSessionTTL 0: %+v, want -1", ttl)
	}

	// Usage and lifecycle.
	cost, in := 0.25, int64(10)
	ur := must(c.RecordUsage(ctx, u, s, client.UsageRequest{Model: "t-every-model", TokensIn: &in, OutputText: "12345678", CostUSD: &cost},
		client.WithIdempotencyKey("k1"))).ok(t)
	if !ur.Created || ur.CostSource != "explicit" || ur.CostUSD != 0.25 || ur.TokensIn != 10 || ur.TokensOut != 2 || !ur.TokensEstimated || ur.PricedAs != nil {
		t.Fatalf("RecordUsage: %+v", ur)
	}
	if rec.last().Header.Get("Idempotency-Key") != "k1" {
		t.Fatalf("Idempotency-Key sent: %q", rec.last().Header.Get("Idempotency-Key"))
	}
	if ur := must(c.RecordUsage(ctx, u, s, client.UsageRequest{Model: "t-every-model", RequestID: "k1"})).ok(t); ur.Created || ur.CostUSD != 0.25 {
		t.Fatalf("repeated RecordUsage (request_id): %+v, want the first result with Created false", ur)
	}
	if ur := must(c.RecordUsage(ctx, u, s, client.UsageRequest{Model: "t-every-model", Error: true})).ok(t); !ur.Created || !ur.Error {
		t.Fatalf("RecordUsage without key: %+v", ur)
	}
	r := must(c.GetSession(ctx, u, s)).ok(t)
	if r.Status != client.StatusRunning || r.StoredStatus != client.StatusRunning || r.EntryCount != 2 || r.Calls != 2 || r.ErrorCount != 1 ||
		r.TokensIn != 10 || r.CostUSD != 0.25 || r.StartedAt == nil || r.LastActivityAt == nil || r.EndedAt != nil ||
		r.TTLSeconds == nil || *r.TTLSeconds != -1 || r.LastModel == nil || r.Models["t-every-model"].CostUSD != 0.25 {
		t.Fatalf("GetSession: %+v", r)
	}
	l := must(c.ListUserSessions(ctx, u, client.ListSessionsOptions{})).ok(t)
	if len(l.Sessions) != 1 || l.Sessions[0].SessionID != s || l.NextCursor != "" || l.Sessions[0].TTLSeconds != nil {
		t.Fatalf("ListUserSessions: %+v", l)
	}
	if l := must(c.ListUserSessions(ctx, u, client.ListSessionsOptions{Status: client.StatusCompleted})).ok(t); len(l.Sessions) != 0 {
		t.Fatalf("ListUserSessions completed: %+v", l)
	}
	found := false
	for r, err := range c.AllSessions(ctx, client.ListSessionsOptions{Limit: 1}) {
		mustNil(t, err)
		found = found || r.UserID == u
	}
	if !found {
		t.Fatal("AllSessions did not list the session")
	}
	if l := must(c.ListSessions(ctx, client.ListSessionsOptions{Limit: 500})).ok(t); !slices.ContainsFunc(l.Sessions, func(r client.SessionRecord) bool { return r.UserID == u }) {
		t.Fatalf("ListSessions: %+v", l)
	}
	if st := must(c.GetSessionStats(ctx)).ok(t); st.Sessions.Total < 1 || st.Calls < 2 || st.Errors < 1 || st.CostUSD < 0.25 {
		t.Fatalf("GetSessionStats: %+v", st)
	}
	cbm := must(c.GetCostByModel(ctx)).ok(t)
	if !slices.ContainsFunc(cbm.Models, func(m client.ModelTotals) bool { return m.Model == "t-every-model" && m.Calls >= 2 && m.Errors >= 1 }) {
		t.Fatalf("GetCostByModel: %+v", cbm)
	}
	if r := must(c.FailSession(ctx, u, s)).ok(t); r.Status != client.StatusFailed || r.EndedAt == nil {
		t.Fatalf("FailSession: %+v", r)
	}
	if r := must(c.FailSession(ctx, u, s)).ok(t); r.Status != client.StatusFailed {
		t.Fatalf("FailSession again: %+v", r)
	}
	_, err := c.CompleteSession(ctx, u, s)
	wantErr(t, err, 409, "session_ended")
	if !errors.Is(err, client.ErrSessionEnded) || !client.IsConflict(err) {
		t.Fatalf("CompleteSession after fail: %v", err)
	}

	// Registry.
	cs := must(c.CreateSession(ctx, u, client.CreateSessionRequest{Title: new("t"), Metadata: map[string]string{"repo": "r"}}, client.WithIdempotencyKey("c1"))).ok(t)
	if !cs.Created || len(cs.SessionID) != 36 || *cs.Title != "t" || cs.Metadata["repo"] != "r" {
		t.Fatalf("CreateSession: %+v", cs)
	}
	if again := must(c.CreateSession(ctx, u, client.CreateSessionRequest{}, client.WithIdempotencyKey("c1"))).ok(t); again.Created || again.SessionID != cs.SessionID {
		t.Fatalf("retried CreateSession: %+v", again)
	}
	_, err = c.CreateSession(ctx, u, client.CreateSessionRequest{SessionID: cs.SessionID})
	wantErr(t, err, 409, "session_exists")
	up := must(c.UpdateSession(ctx, u, cs.SessionID, client.UpdateSessionRequest{Title: client.Null[string](), Metadata: client.Set(map[string]*string{"repo": nil, "pr": new("42")})})).ok(t)
	if up.Title != nil || len(up.Metadata) != 1 || up.Metadata["pr"] != "42" {
		t.Fatalf("UpdateSession: %+v", up)
	}
	if l := must(c.ListUserSessions(ctx, u, client.ListSessionsOptions{Metadata: map[string]string{"pr": "42"}})).ok(t); len(l.Sessions) != 1 || l.Sessions[0].SessionID != cs.SessionID {
		t.Fatalf("ListUserSessions by metadata: %+v", l)
	}
	if r := must(c.CompleteSessionWithSummary(ctx, u, cs.SessionID, "done")).ok(t); *r.Summary != "done" || *r.EndReason != "completed" {
		t.Fatalf("CompleteSessionWithSummary: %+v", r)
	}
	mustNil(t, c.DeleteSession(ctx, u, cs.SessionID))
	st := must(c.StartSession(ctx, u, client.StartSessionRequest{Match: map[string]string{"agent": "a"}})).ok(t)
	if !st.IsNew || st.Closed == nil || st.SessionsContext == nil || st.Recent == nil {
		t.Fatalf("StartSession: %+v", st)
	}
	if again := must(c.StartSession(ctx, u, client.StartSessionRequest{Match: map[string]string{"agent": "a"}})).ok(t); again.IsNew || again.SessionID != st.SessionID {
		t.Fatalf("StartSession again: %+v", again)
	}
	if r := must(c.EndActiveSession(ctx, u, client.EndActiveSessionRequest{Summary: new("s"), Match: map[string]string{"agent": "a"}})).ok(t); r.SessionID != st.SessionID || *r.EndReason != "completed" {
		t.Fatalf("EndActiveSession: %+v", r)
	}
	_, err = c.EndActiveSession(ctx, u, client.EndActiveSessionRequest{Match: map[string]string{"agent": "a"}})
	wantErr(t, err, 404, "not_found")
	if got := must(c.PatchSessionState(ctx, u, st.SessionID, map[string]any{"a": 1, "b": nil})).ok(t); string(got) != `{"a":1}` {
		t.Fatalf("PatchSessionState: %s", got)
	}
	if got := must(c.GetSessionState(ctx, u, st.SessionID)).ok(t); string(got) != `{"a":1}` {
		t.Fatalf("GetSessionState: %s", got)
	}
	if got := must(c.PatchUserState(ctx, u, map[string]any{"lang": "fr"})).ok(t); string(got) != `{"lang":"fr"}` {
		t.Fatalf("PatchUserState: %s", got)
	}
	if got := must(c.GetUserState(ctx, u)).ok(t); string(got) != `{"lang":"fr"}` {
		t.Fatalf("GetUserState: %s", got)
	}
	mustNil(t, c.DeleteSession(ctx, u, st.SessionID))
	everyBlocksOperation(t, c, u)
	everyEventsOperation(t, c, u)

	everyMessageOperation(t, ctx, c, u)

	// Deletes.
	mustNil(t, c.DeleteEntry(ctx, u, s, "q1"))
	wantErr(t, c.DeleteEntry(ctx, u, s, "q1"), 404, "not_found")
	mustNil(t, c.DeleteSession(ctx, u, s))
	_, err = c.GetSession(ctx, u, s)
	wantErr(t, err, 404, "not_found")
	wantErr(t, c.DeleteSession(ctx, u, s), 404, "not_found")

	// Erasure: another user, erased whole; its writes refused a while after.
	eu := u + "-erased"
	must(c.AppendEntry(ctx, eu, "s1", client.AppendEntryRequest{Question: "q", Answer: "a"})).ok(t)
	if e := must(c.EraseUser(ctx, eu)).ok(t); !e.Erased || e.Remaining != nil {
		t.Fatalf("EraseUser: %+v", e)
	}
	_, err = c.AppendEntry(ctx, eu, "s1", client.AppendEntryRequest{Question: "q", Answer: "a"})
	wantErr(t, err, 409, "user_erasing")

	// Google ADK sessions.
	adkSID := "adk-1"
	created := must(c.CreateAdkSession(ctx, "weather", u, client.AdkCreateRequest{SessionID: &adkSID,
		State: map[string]json.RawMessage{"city": json.RawMessage(`"Paris"`), "user:units": json.RawMessage(`"metric"`), "temp:x": json.RawMessage(`1`)}})).ok(t)
	if created.ID != adkSID || created.LastUpdateTime == nil || string(created.State["user:units"]) != `"metric"` || created.State["temp:x"] != nil {
		t.Fatalf("CreateAdkSession: %+v", created)
	}
	ev := json.RawMessage(fmt.Sprintf(`{"id":"e1","author":"user","timestamp":%v}`, *created.LastUpdateTime+1))
	if a := must(c.AppendAdkEvent(ctx, "weather", u, adkSID, client.AdkAppendRequest{Event: ev, LastUpdateTime: *created.LastUpdateTime,
		StateDelta: map[string]json.RawMessage{"city": json.RawMessage(`"Rome"`)}})).ok(t); a.Index != 0 || a.Replaced {
		t.Fatalf("AppendAdkEvent: %+v", a)
	}
	if _, err := c.AppendAdkEvent(ctx, "weather", u, adkSID, client.AdkAppendRequest{Event: ev, LastUpdateTime: *created.LastUpdateTime}); !client.IsConflict(err) {
		t.Fatalf("AppendAdkEvent of a stale copy: %v, want a conflict", err)
	}
	if got := must(c.GetAdkSession(ctx, "weather", u, adkSID, client.AdkGetOptions{NumRecentEvents: 5})).ok(t); len(got.Events) != 1 || string(got.State["city"]) != `"Rome"` || got.NextCursor != nil {
		t.Fatalf("GetAdkSession: %+v", got)
	}
	one := 1
	if l := must(c.ListAdkSessions(ctx, "weather", u, client.AdkListOptions{Limit: &one, Order: "desc"})).ok(t); len(l.Sessions) != 1 || l.TotalItems != 1 || l.Sessions[0].ID != adkSID {
		t.Fatalf("ListAdkSessions: %+v", l)
	}
	if l := must(c.ListAdkAppSessions(ctx, "weather", client.AdkListOptions{Order: "asc"})).ok(t); len(l.Sessions) != 1 || l.Sessions[0].UserID != u || l.Sessions[0].SidecarSessionID != "weather."+adkSID || l.NextCursor != nil {
		t.Fatalf("ListAdkAppSessions: %+v", l)
	}
	mustNil(t, c.DeleteAdkSession(ctx, "weather", u, adkSID))
	if _, err := c.GetAdkSession(ctx, "weather", u, adkSID, client.AdkGetOptions{}); !client.IsNotFound(err) {
		t.Fatalf("GetAdkSession after delete: %v", err)
	}

	// Locks.
	g := must(c.AcquireLock(ctx, "t-every-lock", client.AcquireLockRequest{Owner: "me", TTLMs: 5000})).ok(t)
	if len(g.Token) != 32 || g.FencingToken < 1 || g.Owner != "me" || g.TTLMs != 5000 || g.ExpiresAt.IsZero() {
		t.Fatalf("AcquireLock: %+v", g)
	}
	if info := must(c.InspectLock(ctx, "t-every-lock")).ok(t); !info.Held || info.Owner != "me" || info.FencingToken != g.FencingToken || info.TTLMs <= 0 {
		t.Fatalf("InspectLock: %+v", info)
	}
	if g2 := must(c.RefreshLock(ctx, "t-every-lock", client.RefreshLockRequest{Token: g.Token, TTLMs: 8000})).ok(t); g2.TTLMs != 8000 || g2.Token != g.Token {
		t.Fatalf("RefreshLock: %+v", g2)
	}
	_, err = c.AcquireLock(ctx, "t-every-lock", client.AcquireLockRequest{WaitMs: 10})
	if !errors.Is(err, client.ErrHeld) || !client.IsConflict(err) {
		t.Fatalf("AcquireLock of a held lock: %v, want ErrHeld", err)
	}
	err = c.ReleaseLock(ctx, "t-every-lock", strings.Repeat("0", 32))
	if !errors.Is(err, client.ErrNotOwner) || !client.IsConflict(err) {
		t.Fatalf("ReleaseLock with another token: %v, want ErrNotOwner", err)
	}
	mustNil(t, c.ReleaseLock(ctx, "t-every-lock", g.Token))
	err = c.ReleaseLock(ctx, "t-every-lock", g.Token)
	if !errors.Is(err, client.ErrNotHeld) || !client.IsNotFound(err) {
		t.Fatalf("ReleaseLock again: %v, want ErrNotHeld", err)
	}
	_, err = c.RefreshLock(ctx, "t-every-lock", client.RefreshLockRequest{Token: g.Token})
	if !errors.Is(err, client.ErrLost) || !client.IsConflict(err) {
		t.Fatalf("RefreshLock of a released lock: %v, want ErrLost", err)
	}
	if info := must(c.InspectLock(ctx, "t-every-lock")).ok(t); info.Held || info.Owner != "" || info.FencingToken != 0 {
		t.Fatalf("InspectLock after release: %+v", info)
	}

	// LangGraph checkpoints: a write may come before its checkpoint.
	blob := client.CheckpointBlob{Type: "json", Data: "e30="}
	w := client.PutCheckpointWritesRequest{CheckpointID: "c1", TaskID: "t1",
		Writes: []client.CheckpointWrite{{Idx: 0, Channel: "x", Type: "json", Data: "MQ=="}}}
	if st := must(c.PutCheckpointWrites(ctx, u, "thread-1", w)).ok(t); st.Stored != 1 {
		t.Fatalf("PutCheckpointWrites: %+v", st)
	}
	ref := must(c.PutCheckpoint(ctx, u, "thread-1", client.PutCheckpointRequest{CheckpointID: "c1", Checkpoint: blob,
		Metadata: map[string]any{"source": "input"}, ChannelVersions: map[string]string{"x": "1"},
		ChannelValues: []client.CheckpointChannelValue{{Channel: "x", Version: "1", Type: "json", Data: "Mg=="}}})).ok(t)
	if ref.CheckpointID != "c1" || ref.CheckpointNS != "" {
		t.Fatalf("PutCheckpoint: %+v", ref)
	}
	if tp := must(c.GetCheckpointTuple(ctx, u, "thread-1", "", "")).ok(t); tp.CheckpointID != "c1" || len(tp.ChannelValues) != 1 || len(tp.PendingWrites) != 1 || tp.PendingWrites[0].TaskID != "t1" {
		t.Fatalf("GetCheckpointTuple: %+v", tp)
	}
	_, err = c.GetCheckpointTuple(ctx, u, "thread-1", "", "nope")
	if !client.IsNotFound(err) {
		t.Fatalf("GetCheckpointTuple of nothing: %v", err)
	}
	if pg := must(c.ListCheckpoints(ctx, u, "thread-1", client.ListCheckpointsOptions{Filter: map[string]any{"source": "input"}, Limit: 5})).ok(t); len(pg.Checkpoints) != 1 || pg.NextBefore != nil {
		t.Fatalf("ListCheckpoints: %+v", pg)
	}

	// Every operation of the document was sent.
	doc, err := openapitest.Parse(openapi.JSON())
	mustNil(t, err)
	sent := map[string]bool{}
	for _, r := range rec.reqs {
		sent[r.Method+" "+r.URL.Path] = true
	}
	for _, op := range doc.Operations() {
		if !op.ClientMethod() {
			continue // the MCP route: MCP clients speak it
		}
		re := regexp.MustCompile("^" + op.Method + " " + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(op.Path), `[^/]+`) + "$")
		if !slices.ContainsFunc(slices.Collect(maps.Keys(sent)), re.MatchString) {
			t.Errorf("operation %s (%s) was not called", op.ID, op.Pattern())
		}
	}
}

// TestErrors maps the sidecar's error answers to *client.Error and the
// helpers, live.
func TestErrors(t *testing.T) {
	ctx := t.Context()
	c := client.New(sidecarURL)
	const u, s = "t-errors", "s1"
	_, err := c.AppendEntry(ctx, u, s, client.AppendEntryRequest{QAID: "q1", Question: "q", Answer: "a"})
	mustNil(t, err)
	g, err := c.AcquireLock(ctx, "t-errors-lock", client.AcquireLockRequest{})
	mustNil(t, err)
	t.Cleanup(func() { _ = c.ReleaseLock(context.Background(), "t-errors-lock", g.Token) })

	ignore := func(_ any, err error) error { return err }
	for _, tc := range []struct {
		name     string
		err      error
		status   int
		code     string
		notFound bool
		conflict bool
	}{
		{"unknown entry", ignore(c.GetEntry(ctx, u, s, "nope")), 404, "not_found", true, false},
		{"update unknown entry", ignore(c.UpdateEntry(ctx, u, s, "nope", client.UpdateEntryRequest{Answer: new("x")})), 404, "not_found", true, false},
		{"feedback on unknown session", ignore(c.SetFeedback(ctx, u, "nope", "q1", client.FeedbackRequest{FeedbackScore: client.Set(1)})), 404, "not_found", true, false},
		{"clear feedback of unknown entry", ignore(c.ClearFeedback(ctx, u, s, "nope")), 404, "not_found", true, false},
		{"unknown session record", ignore(c.GetSession(ctx, u, "nope")), 404, "not_found", true, false},
		{"ttl of unknown session", ignore(c.GetSessionTTL(ctx, u, "nope")), 404, "not_found", true, false},
		{"set ttl of unknown session", ignore(c.SetSessionTTL(ctx, u, "nope", 5)), 404, "not_found", true, false},
		{"complete unknown session", ignore(c.CompleteSession(ctx, u, "nope")), 404, "not_found", true, false},
		{"fail unknown session", ignore(c.FailSession(ctx, u, "nope")), 404, "not_found", true, false},
		{"patch unknown context", ignore(c.UpdateContext(ctx, u, s, "nope", client.ContextEntry{"a": 1})), 404, "not_found", true, false},
		{"release unheld lock", c.ReleaseLock(ctx, "t-errors-free", "tok"), 404, "not_held", true, false},
		{"held lock", ignore(c.AcquireLock(ctx, "t-errors-lock", client.AcquireLockRequest{})), 409, "lock_held", false, true},
		{"bad id", ignore(c.GetEntry(ctx, "bad:id", s, "q1")), 400, "invalid_id", false, false},
		{"bad lock name", ignore(c.InspectLock(ctx, "a{b}")), 400, "invalid_id", false, false},
		{"last_n out of range", ignore(c.ListEntries(ctx, u, s, 5000)), 400, "invalid_query", false, false},
		{"search without words", ignore(c.SearchEntries(ctx, u, s, "!!", 0)), 400, "invalid_query", false, false},
		{"score out of range", ignore(c.SetFeedback(ctx, u, s, "q1", client.FeedbackRequest{FeedbackScore: client.Set(9)})), 400, "invalid_field", false, false},
		{"empty feedback", ignore(c.SetFeedback(ctx, u, s, "q1", client.FeedbackRequest{})), 400, "invalid_field", false, false},
		{"empty update", ignore(c.UpdateEntry(ctx, u, s, "q1", client.UpdateEntryRequest{})), 400, "invalid_field", false, false},
		{"bad status filter", ignore(c.ListSessions(ctx, client.ListSessionsOptions{Status: "bogus"})), 400, "invalid_query", false, false},
		{"bad cursor", ignore(c.ListUserSessions(ctx, u, client.ListSessionsOptions{Cursor: "garbage"})), 400, client.CodeInvalidCursor, false, false},
		{"bad limit", ignore(c.ListSessions(ctx, client.ListSessionsOptions{Limit: 501})), 400, "invalid_query", false, false},
		{"usage without model", ignore(c.RecordUsage(ctx, u, s, client.UsageRequest{})), 400, "invalid_field", false, false},
		{"usage keys differ", ignore(c.RecordUsage(ctx, u, s, client.UsageRequest{Model: "m", RequestID: "a"}, client.WithIdempotencyKey("b"))), 400, "invalid_field", false, false},
		{"ttl out of range", ignore(c.SetSessionTTL(ctx, u, s, -5)), 400, "invalid_field", false, false},
		{"lock ttl out of range", ignore(c.AcquireLock(ctx, "t-errors-x", client.AcquireLockRequest{TTLMs: 86400001})), 400, "invalid_field", false, false},
		{"trace without status", ignore(c.AppendTrace(ctx, u, s, client.AppendTraceRequest{OriginFunction: "f"})), 400, "invalid_field", false, false},
		{"context patch of id", ignore(c.UpdateContext(ctx, u, s, "x", client.ContextEntry{"id": "y"})), 400, "invalid_field", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.err, tc.status, tc.code)
			var e *client.Error
			errors.As(tc.err, &e)
			if e.Message == "" || e.RetryAfter != 0 || !strings.Contains(e.Error(), tc.code) {
				t.Errorf("%#v: want a message, no RetryAfter", e)
			}
			if client.IsNotFound(tc.err) != tc.notFound || client.IsConflict(tc.err) != tc.conflict || client.IsUnavailable(tc.err) {
				t.Errorf("IsNotFound %v, IsConflict %v, IsUnavailable %v", client.IsNotFound(tc.err), client.IsConflict(tc.err), client.IsUnavailable(tc.err))
			}
		})
	}
}

// Ids no URL path can carry fail before anything is sent: "." and ".."
// match the id pattern, but path cleaning would answer another route.
func TestBadIDs(t *testing.T) {
	c, rec := recording(sidecarURL)
	ctx := t.Context()
	for _, err := range []error{
		ignore2(c.GetEntry(ctx, "", "s", "q")),
		ignore2(c.GetEntry(ctx, "u", "", "q")),
		ignore2(c.GetEntry(ctx, "u", "s", "")),
		ignore2(c.GetEntry(ctx, "u", "s", ".")),
		ignore2(c.AppendEntry(ctx, "u", "..", client.AppendEntryRequest{Question: "q", Answer: "a"})),
		c.DeleteContext(ctx, "u", "s", ""),
		ignore2(c.RefreshLock(ctx, ".", client.RefreshLockRequest{Token: "t"})),
		ignore2(c.ListUserSessions(ctx, "", client.ListSessionsOptions{})),
		ignore2(c.InspectLock(ctx, "")),
		ignore2(c.Acquire(ctx, "", client.LeaseOptions{})),
	} {
		if !errors.Is(err, client.ErrBadID) {
			t.Errorf("got %v, want ErrBadID", err)
		}
	}
	if len(rec.reqs) != 0 {
		t.Errorf("%d requests sent for bad ids", len(rec.reqs))
	}
}

func ignore2[T any](_ T, err error) error { return err }

// TestTokenAndOutage runs a sidecar with SIDECAR_API_TOKEN: the bearer
// token, User-Agent and a custom http.Client on the wire, 401 without the
// token, then 503 with RetryAfter once its Redis is gone.
func TestTokenAndOutage(t *testing.T) {
	srv := redisstoretest.New(t)
	h := sidecartest.Start(t, srv, envconf.Env{"SIDECAR_API_TOKEN": "s3cret", "SIDECAR_REQUEST_TIMEOUT": "2s"}, modules.All()...)
	ctx := t.Context()

	_, err := client.New(h.API).ListSessions(ctx, client.ListSessionsOptions{})
	wantErr(t, err, 401, "unauthorized")
	_, err = client.New(h.API, client.WithBearerToken("wrong")).GetSessionStats(ctx)
	wantErr(t, err, 401, "unauthorized")

	c, rec := recording(h.API+"/", client.WithBearerToken("s3cret"))
	res := must(c.AppendEntry(ctx, "alice", "chat-1", client.AppendEntryRequest{Question: "q", Answer: "a"})).ok(t)
	if !res.Created {
		t.Fatalf("append with the token: %+v", res)
	}
	req := rec.last()
	if got := req.Header.Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization %q", got)
	}
	if got := req.Header.Get("User-Agent"); got != client.DefaultUserAgent {
		t.Errorf("User-Agent %q, want %q", got, client.DefaultUserAgent)
	}
	if got := req.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q", got)
	}
	if req.URL.Path != "/v1/users/alice/sessions/chat-1/entries" {
		t.Errorf("path %q: the base URL's trailing slash should go", req.URL.Path)
	}
	c, rec = recording(h.API, client.WithBearerToken("s3cret"), client.WithUserAgent("my-agent/1.0"))
	_ = must(c.ListEntries(ctx, "alice", "chat-1", 0)).ok(t)
	if req := rec.last(); req.Header.Get("User-Agent") != "my-agent/1.0" || req.Header.Get("Content-Type") != "" {
		t.Errorf("GET: User-Agent %q, Content-Type %q", req.Header.Get("User-Agent"), req.Header.Get("Content-Type"))
	}

	srv.Kill()
	_, err = c.GetSession(ctx, "alice", "chat-1")
	wantErr(t, err, 503, "redis_unavailable")
	var e *client.Error
	if !errors.As(err, &e) || e.RetryAfter != time.Second || !client.IsUnavailable(err) {
		t.Fatalf("outage: %#v, want RetryAfter 1s", e)
	}
}

// The default http.Client follows no redirect: an answer that redirects
// (a proxy's, say; the sidecar itself never redirects) is an error, not
// another route's answer.
func TestNoRedirects(t *testing.T) {
	redirect := httptest.NewServer(http.RedirectHandler(sidecarURL+"/v1/sessions/stats", http.StatusTemporaryRedirect))
	defer redirect.Close()
	_, err := client.New(redirect.URL).GetSessionStats(t.Context())
	var e *client.Error
	if !errors.As(err, &e) || e.Status/100 != 3 || e.Code != "" {
		t.Fatalf("got %v, want a 3xx *client.Error", err)
	}
}
