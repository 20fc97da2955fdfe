package messages_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// keysOf returns every key in Redis with its string dump, to prove that a
// refused call wrote nothing.
func snapshot(t *testing.T, srv *redisstoretest.Server) string {
	t.Helper()
	c := srv.Client(t)
	var b strings.Builder
	for _, k := range scan(t, srv) {
		if strings.HasPrefix(k, "agent_sessions_global:") || strings.HasPrefix(k, "agent_sessions_by_user:") {
			continue // scored by activity time
		}
		typ, _ := c.Do(t.Context(), c.B().Type().Key(k).Build()).ToString()
		switch typ {
		case "hash":
			m, _ := c.Do(t.Context(), c.B().Hgetall().Key(k).Build()).AsStrMap()
			delete(m, "last_activity_at")
			delete(m, "slid_at")
			fmt.Fprintf(&b, "%s %v\n", k, m)
		case "zset":
			m, _ := c.Do(t.Context(), c.B().Zrange().Key(k).Min("0").Max("-1").Withscores().Build()).AsZScores()
			fmt.Fprintf(&b, "%s %v\n", k, m)
		default:
			fmt.Fprintf(&b, "%s %s\n", k, typ)
		}
	}
	return b.String()
}

func scan(t *testing.T, srv *redisstoretest.Server) []string {
	t.Helper()
	c := srv.Client(t)
	keys, err := c.Do(t.Context(), c.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys) // KEYS answers in the dict's order, which a rehash changes
	return keys
}

func TestRetriesAndConflicts(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_MAX_MESSAGES": "4"})
		a := post(t, h, `{"id":"a","role":"user","content":"hi","item":{"x": [1, 2.50, "<&>"]},"format":"test.v1"}`, 201)
		if string(a.Item) != `{"x": [1, 2.50, "<&>"]}` {
			t.Fatalf("item not byte for byte: %s", a.Item)
		}
		again := post(t, h, `{"id":"a","role":"user","content":"hi","item":{"x": [1, 2.50, "<&>"]},"format":"test.v1"}`, 200)
		if again.CreatedAt != a.CreatedAt {
			t.Fatalf("retry: %+v, want the stored %+v", again, a)
		}
		before := snapshot(t, srv)
		for _, c := range []struct {
			body   string
			header []string
			status int
			code   string
		}{
			{`{"id":"a","role":"user","content":"other"}`, nil, 409, "id_conflict"},
			{`{"id":"b","role":"user","content":"x","parent_id":"nope"}`, nil, 400, "unknown_parent"},
			{`{"id":"b","role":"User","content":"x"}`, nil, 400, "invalid_field"},
			{`{"id":"b","role":"a-b","content":"x"}`, nil, 400, "invalid_field"},
			{`{"id":"b","role":"` + strings.Repeat("a", 33) + `","content":"x"}`, nil, 400, "invalid_field"},
			{`{"id":"b","role":"user","content":5}`, nil, 400, "invalid_field"},
			{`{"id":"b","role":"user","parts":{"a":1}}`, nil, 400, "invalid_field"},
			{`{"id":"b","role":"user","item":{}}`, nil, 400, "invalid_field"},
			{`{"id":"b","role":"user","metadata":"` + strings.Repeat("m", 16<<10) + `"}`, nil, 400, "invalid_field"},
			{`{"id":"b","role":"user","tool_calls":[{"id":"c","name":"f"}]}`, nil, 400, "invalid_field"},
			{`{"id":"b","role":"user","colour":"red"}`, nil, 400, "unknown_field"},
			{`{"id":"b:c","role":"user"}`, nil, 400, "invalid_field"},
			{`{"id":"b","role":"user","content":"x"}`, []string{"If-Match", `"zz"`}, 412, "leaf_moved"},
			{`{"messages":[{"id":"b","role":"user"},{"id":"b","role":"user"}]}`, nil, 400, "invalid_field"},
			{`{"messages":[{"id":"b","role":"user"},{"id":"c","role":"user","parent_id":"a"}]}`, nil, 400, "invalid_field"},
			{`{"messages":[{"id":"b","role":"user"},{"id":"a","role":"user","content":"hi"}]}`, nil, 409, "id_conflict"},
			{`{"messages":[{"id":"b","role":"user"},{"id":"c","role":"user"},{"id":"d","role":"user"},{"id":"e","role":"user"}]}`, nil, 409, "session_full"},
			{`{"id":"b","role":"user","parts":[{"type":"text","text":"` + strings.Repeat("x", 300<<10) + `"}]}`, nil, 400, "invalid_field"},
		} {
			rep := h.Do(t, "POST", msgs, c.body, c.header...)
			if rep.Status != c.status || rep.Code() != c.code {
				t.Errorf("POST %.80s: got %s, want %d %s", c.body, rep, c.status, c.code)
			}
		}
		if after := snapshot(t, srv); after != before {
			t.Fatalf("refused calls wrote:\nbefore %s\nafter %s", before, after)
		}
		// If-Match with the right leaf, and Idempotency-Key retries
		post(t, h, `{"id":"b","role":"user","content":"x"}`, 201, "If-Match", `"a"`)
		k := post(t, h, `{"role":"assistant","content":"y"}`, 201, "Idempotency-Key", "k1")
		if k2 := post(t, h, `{"role":"assistant","content":"y"}`, 200, "Idempotency-Key", "k1"); k2.ID != k.ID {
			t.Fatalf("Idempotency-Key retry: got %s, want %s", k2.ID, k.ID)
		}
		if len(k.ID) != 36 || k.ID[14] != '7' {
			t.Fatalf("generated id %q: want a UUIDv7", k.ID)
		}
	})
}

func TestTreeWrites(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"messages":[{"id":"a","role":"user","content":"one two"},{"id":"b","role":"assistant","content":"three"},{"id":"c","role":"user","content":"four"}]}`, 201)
		post(t, h, `{"id":"b2","role":"assistant","content":"alt","parent_id":"a"}`, 201)
		// PUT replaces b in place; its descendants' path tokens follow
		rep := h.Do(t, "PUT", msgs+"/b", `{"role":"assistant","content":"a much longer answer than before","token_count":100}`)
		if rep.Status != 200 {
			t.Fatalf("PUT b: %s", rep)
		}
		p := path(t, h, "leaf=c")
		if ids(p) != "a,b,c" || p.TotalTokens != 7+100+6 || *p.Messages[1].Content != "a much longer answer than before" {
			t.Fatalf("after PUT: %+v", p)
		}
		// PATCH content of a, then metadata only
		if rep := h.Do(t, "PATCH", msgs+"/a", `{"content":"one two three four five six"}`); rep.Status != 200 {
			t.Fatalf("PATCH a: %s", rep)
		}
		if rep := h.Do(t, "PATCH", msgs+"/a", `{"metadata":{"k":"v"}}`); rep.Status != 200 || !strings.Contains(rep.Body, `"metadata":{"k":"v"}`) {
			t.Fatalf("PATCH a metadata: %s", rep)
		}
		if p := path(t, h, "leaf=c"); p.TotalTokens != 12+100+6 {
			t.Fatalf("total_tokens after PATCH: %d, want %d", p.TotalTokens, 12+100+6)
		}
		if rep := h.Do(t, "PATCH", msgs+"/zz", `{"content":"x"}`); rep.Status != 404 {
			t.Fatalf("PATCH unknown: %s", rep)
		}
		// PUT of a new id appends under the latest leaf (b2)
		if rep := h.Do(t, "PUT", msgs+"/n", `{"role":"user","content":"new"}`); rep.Status != 201 || !strings.Contains(rep.Body, `"parent_id":"b2"`) {
			t.Fatalf("PUT new: %s", rep)
		}
		// delete: a has children
		if rep := h.Do(t, "DELETE", msgs+"/a", ""); rep.Status != 409 || rep.Code() != "has_children" {
			t.Fatalf("DELETE a: %s", rep)
		}
		if rep := h.Do(t, "DELETE", msgs+"/c", ""); rep.Status != 204 {
			t.Fatalf("DELETE c: %s", rep)
		}
		// pop: n, then b2; the latest leaf is then a
		for _, want := range []string{"n", "b2"} {
			rep := h.Do(t, "POST", msgs+"/pop", "")
			var m msg
			rep.JSON(t, &m)
			if rep.Status != 200 || m.ID != want {
				t.Fatalf("pop: %s, want %s", rep, want)
			}
		}
		if rep := h.Do(t, "POST", msgs+"/pop", ""); rep.Status != 409 || rep.Code() != "has_children" {
			t.Fatalf("pop a (child b left): %s", rep)
		}
		if rep := h.Do(t, "DELETE", msgs+"/a?subtree=true", ""); rep.Status != 204 {
			t.Fatalf("DELETE a subtree: %s", rep)
		}
		if rep := h.Do(t, "POST", msgs+"/pop", ""); rep.Status != 404 {
			t.Fatalf("pop empty: %s", rep)
		}
		post(t, h, `{"id":"x","role":"user","content":"again"}`, 201)
		if rep := h.Do(t, "DELETE", msgs, ""); rep.Status != 204 {
			t.Fatalf("clear: %s", rep)
		}
		if p := path(t, h, ""); p.Total != 0 || len(p.Messages) != 0 {
			t.Fatalf("after clear: %+v", p)
		}
		var r struct {
			MessageCount int64 `json:"message_count"`
		}
		h.Do(t, "GET", "/v1/users/alice/sessions/s1", "").JSON(t, &r)
		if r.MessageCount != 0 {
			t.Fatalf("message_count after clear: %d", r.MessageCount)
		}
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s1", ""); rep.Status != 204 {
			t.Fatalf("delete session: %s", rep)
		}
		if keys := scan(t, srv); len(keys) != 0 && !allIndexes(keys) {
			t.Fatalf("keys left after the session's delete: %q", keys)
		}
	})
}

// allIndexes reports whether keys are only the user's and global indexes:
// session indexes, the user's list of sessions holding search documents
// and search marker (a session gone is dropped from the list by queries,
// and both expire; its documents hash goes with it), and the deleted
// session's event stream (a tombstone holding its `deleted` event for
// 300 s).
func allIndexes(keys []string) bool {
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, "agent_sessions_global:"), strings.HasPrefix(k, "agent_sessions_by_user:"),
			strings.HasPrefix(k, "agent_search_sessions:"), strings.HasPrefix(k, "agent_search_stats:"),
			strings.HasPrefix(k, "agent_session_events:"):
		default:
			return false
		}
	}
	return true
}

// Eight writers append to one parent while others pop: every append lands
// exactly once, no pop answers a message twice, and the tree stays
// consistent (message_count = children found, every message reachable).
func TestConcurrentAppendAndPop(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"root","role":"system","content":"r"}`, 201)
		c := sidecartest.NewClient(t, h.API)
		const writers, each = 8, 20
		var wg sync.WaitGroup
		errs := make(chan string, writers*each*2)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					body := fmt.Sprintf(`{"id":"w%d-%d","role":"user","content":"x","parent_id":"root"}`, w, i)
					if rep := c.Send(t.Context(), "POST", msgs, body); rep.Status != 201 {
						errs <- "append: " + rep.String()
					}
				}
			}()
		}
		wg.Wait()
		rep := h.Do(t, "GET", msgs+"/root/children", "")
		var kids struct{ Messages []msg }
		rep.JSON(t, &kids)
		if len(kids.Messages) != writers*each {
			t.Fatalf("children of root: %d, want %d", len(kids.Messages), writers*each)
		}
		// 8 poppers drain the leaves: each pop takes the latest leaf, which
		// is then root (with children left): has_children ends them. Pop
		// under appends: only the messages appended come back, once each.
		popped := map[string]int{}
		var mu sync.Mutex
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					rep := c.Send(t.Context(), "POST", msgs+"/pop", "")
					if rep.Status == 409 || rep.Status == 404 {
						continue
					}
					var m struct{ ID string }
					if rep.Status != 200 || json.Unmarshal([]byte(rep.Body), &m) != nil {
						errs <- "pop: " + rep.String()
						continue
					}
					mu.Lock()
					popped[m.ID]++
					mu.Unlock()
				}
			}()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					body := fmt.Sprintf(`{"role":"user","content":"late %d"}`, i)
					if rep := c.Send(t.Context(), "POST", msgs, body); rep.Status != 201 {
						errs <- "late append: " + rep.String()
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		for id, n := range popped {
			if n != 1 {
				t.Errorf("message %s popped %d times", id, n)
			}
		}
		var r struct {
			MessageCount int64 `json:"message_count"`
		}
		h.Do(t, "GET", "/v1/users/alice/sessions/s1", "").JSON(t, &r)
		want := int64(1 + writers*each + writers*5 - len(popped))
		if r.MessageCount != want {
			t.Fatalf("message_count %d, want %d (popped %d)", r.MessageCount, want, len(popped))
		}
		// every remaining message is reachable from the root's subtree
		reach := countSubtree(t, h, "root")
		if int64(reach) != want {
			t.Fatalf("reachable from root: %d, want %d", reach, want)
		}
	})
}

func countSubtree(t *testing.T, h *sidecartest.Host, id string) int {
	t.Helper()
	var kids struct{ Messages []msg }
	h.Do(t, "GET", msgs+"/"+id+"/children", "").JSON(t, &kids)
	n := 1
	for _, k := range kids.Messages {
		n += countSubtree(t, h, k.ID)
	}
	return n
}

// Eight poppers drain a chain of 200 messages at once: every message comes
// back exactly once, deepest first per popper, then 404.
func TestConcurrentPops(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		chain(t, h, "s1", 200)
		c := sidecartest.NewClient(t, h.API)
		var mu sync.Mutex
		var wg sync.WaitGroup
		popped := map[string]int{}
		errs := make(chan string, 8*40)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				last := 1 << 30
				for range 40 {
					rep := c.Send(t.Context(), "POST", msgs+"/pop", "")
					if rep.Status == 404 {
						return
					}
					var m struct{ ID string }
					if rep.Status != 200 || json.Unmarshal([]byte(rep.Body), &m) != nil {
						errs <- rep.String()
						return
					}
					var n int
					fmt.Sscanf(m.ID, "c%d", &n)
					if n >= last {
						errs <- fmt.Sprintf("popped %s after c%d: not deepest first", m.ID, last)
					}
					last = n
					mu.Lock()
					popped[m.ID]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
		if len(popped) != 200 {
			t.Fatalf("popped %d distinct messages, want 200", len(popped))
		}
		for id, n := range popped {
			if n != 1 {
				t.Errorf("%s popped %d times", id, n)
			}
		}
	})
}
