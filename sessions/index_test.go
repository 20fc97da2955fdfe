package sessions_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
)

// After Cognee only appended (RPUSH), the sidecar indexes just the new tail
// instead of rescanning the whole list: a field the index holds for an
// older entry survives (a full rebuild would delete and rewrite it), and
// Cognee's new entries are found, read and updated.
func TestCogneeAppendsAreIndexedByTheirTail(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		for i := range 3 {
			if r := h.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"qa_id":"s%d","question":"q","answer":"a"}`, i)); r.Status != 201 {
				t.Fatalf("append: %d %s", r.Status, r.Body)
			}
		}
		// A marker only a full rebuild would remove (no entry has this id).
		if err := c.Do(t.Context(), c.B().Hset().Key(keys.Index).FieldValue().FieldValue("marker", "99").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		rpush(t, c, keys.Entries, cogneeEntry("c0", 10), cogneeEntry("c1", 10))
		if r := h.Do(t, "GET", base+"/entries/c1", ""); r.Status != 200 {
			t.Fatalf("GET a Cognee entry: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "PUT", base+"/entries/c0/feedback", `{"feedback_score":5}`); r.Status != 200 {
			t.Fatalf("feedback on a Cognee entry: %d %s", r.Status, r.Body)
		}
		rpush(t, c, keys.Entries, cogneeEntry("c2", 10))
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"s3","question":"q","answer":"a"}`); r.Status != 201 {
			t.Fatalf("append after a Cognee RPUSH: %d %s", r.Status, r.Body)
		}
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"c2","question":"q","answer":"a"}`); r.Status != 200 {
			t.Fatalf("append of Cognee's c2 again: %d %s, want 200 (already stored)", r.Status, r.Body)
		}
		idx, err := c.Do(t.Context(), c.B().Hgetall().Key(keys.Index).Build()).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		if idx["marker"] != "99" {
			t.Fatalf("the index was rebuilt whole (marker gone): %v", idx)
		}
		want := map[string]string{"s0": "0", "s1": "1", "s2": "2", "c0": "3", "c1": "4", "c2": "5", "s3": "6", "#len": "7"}
		for k, v := range want {
			if idx[k] != v {
				t.Fatalf("index[%s] = %q, want %q (index %v)", k, idx[k], v, idx)
			}
		}
		// The fingerprints of the first and last covered elements: qa_id and time.
		if !strings.HasPrefix(idx["#first"], "s0 2") || !strings.HasPrefix(idx["#last"], "s3 2") {
			t.Fatalf("index fingerprints #first %q, #last %q, want s0's and s3's qa_id and time", idx["#first"], idx["#last"])
		}
	})
}

// cogneeEntryAt is an entry as Cognee's create writes it at time at (its
// utcnow().isoformat(): no offset).
func cogneeEntryAt(qa, at string) string {
	return fmt.Sprintf(`{"time": %q, "question": "q %s", "context": "", "answer": "a", "qa_id": %q, "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`,
		at, qa, qa)
}

// Entries a, b, c by the sidecar; Cognee deletes a and c (two rewrites)
// and creates y and c again: [b, y, c] has the index's length and last
// qa_id, yet y is new. A miss is as trustworthy as a hit: y is found, and
// a retried append of y stores nothing.
func TestIndexMissAfterCogneeDeletesAndRecreates(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		for _, id := range []string{"a", "b", "c"} {
			if r := h.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"qa_id":%q,"question":"q","answer":"a"}`, id)); r.Status != 201 {
				t.Fatalf("append %s: %d %s", id, r.Status, r.Body)
			}
		}
		cogneeDelete(t, c, keys.Entries, 0)
		cogneeDelete(t, c, keys.Entries, 1)
		rpush(t, c, keys.Entries, cogneeEntryAt("y", "2026-11-24T10:00:00.000001"), cogneeEntryAt("c", "2026-11-24T10:00:00.000002"))

		if r := h.Do(t, "GET", base+"/entries/y", ""); r.Status != 200 {
			t.Fatalf("GET y: %d %s, want 200", r.Status, r.Body)
		}
		if r := h.Do(t, "PUT", base+"/entries/y/feedback", `{"feedback_score":4}`); r.Status != 200 {
			t.Fatalf("feedback on y: %d %s, want 200", r.Status, r.Body)
		}
		if r := h.Do(t, "POST", base+"/entries", `{"qa_id":"y","question":"retry","answer":"retry"}`); r.Status != 200 {
			t.Fatalf("retried append of y: %d %s, want 200 (already there)", r.Status, r.Body)
		}
		if r := h.Do(t, "GET", base+"/entries/a", ""); r.Status != 404 {
			t.Fatalf("GET a (deleted by Cognee): %d, want 404", r.Status)
		}
		var ids []string
		for _, el := range lrange(t, c, keys.Entries) {
			var e struct {
				QAID string `json:"qa_id"`
			}
			if err := json.Unmarshal([]byte(el), &e); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.QAID)
		}
		if got := strings.Join(ids, ","); got != "b,y,c" {
			t.Fatalf("list holds %s, want b,y,c", got)
		}
	})
}

// Two sidecars and Cognee on one Cognee-written session of 3 000 entries,
// right after Cognee rewrote it: 16 callers read, append and retry at once
// while Cognee appends. Each index step is one script, so callers that
// build the index together build it right: every Cognee entry is found,
// the deleted one is not, every new qa_id is stored exactly once.
func TestConcurrentCallersBuildOneIndex(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		// On a real Redis the search index takes the 3 000 Cognee entries in
		// meanwhile (in the background, a step at a time). On miniredis,
		// whose Lua is some 50 times slower, those steps would starve this
		// test's 800 requests: off there (they have tests of their own).
		var env envconf.Env
		if srv.Mini != nil {
			env = envconf.Env{"SEARCH_INDEX": "false"}
		}
		hosts := []*sidecartest.Host{start(t, srv, env), start(t, srv, env)}
		c := srv.Client(t)
		g := &cogneeList{t: t, c: c, key: keys.Entries, clock: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
		const n = 3000
		els := make([]string, n)
		for i := range n {
			els[i] = g.entry("k"+strconv.Itoa(i), "plain")
		}
		g.push(els...)
		g.rewrite(hasID("qa_id", "k1"))

		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		for w := range 16 {
			cl := sidecartest.NewClient(t, hosts[w%2].API)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 {
					for _, c := range []struct {
						method, path, body string
						want               int
					}{
						{"GET", fmt.Sprintf("/entries/k%d", (w*131+i*17)%n+2), "", 200},
						{"GET", "/entries/k1", "", 404},
						{"POST", "/entries", fmt.Sprintf(`{"qa_id":"w%d-%d","question":"q","answer":"a"}`, w, i), 201},
						{"POST", "/entries", fmt.Sprintf(`{"qa_id":"w%d-%d","question":"q","answer":"a"}`, w, i), 200},
						{"POST", "/entries", fmt.Sprintf(`{"qa_id":"k%d","question":"q","answer":"a"}`, (w+i)%n+2), 200},
					} {
						if r := cl.Send(t.Context(), c.method, base+c.path, c.body); r.Status != c.want {
							errs <- fmt.Errorf("%s %s: %d %s, want %d", c.method, c.path, r.Status, r.Body, c.want)
						}
					}
				}
			}()
		}
		cogneeIDs := []string{}
		for i := range 20 { // Cognee appends meanwhile
			id := "c" + strconv.Itoa(i)
			cogneeIDs = append(cogneeIDs, id)
			g.push(g.entry(id, "plain"))
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		ids := listIDs(t, lrange(t, c, keys.Entries), "qa_id")
		seen := map[string]int{}
		for _, id := range ids {
			seen[id]++
		}
		if len(ids) != n-1+16*10+20 || len(seen) != len(ids) || seen["k1"] != 0 {
			t.Fatalf("the list holds %d entries, %d distinct (k1 %d times), want %d distinct, no k1", len(ids), len(seen), seen["k1"], n-1+16*10+20)
		}
		for _, id := range cogneeIDs {
			if r := hosts[0].Do(t, "GET", base+"/entries/"+id, ""); r.Status != 200 {
				t.Fatalf("Cognee's %s: %d", id, r.Status)
			}
		}
	})
}

// The context index trusts a miss on the same terms: context entries a, b,
// c by the sidecar; another program deletes a and c and adds y, then c
// again byte for byte. Same length, same last element, but a new first
// one: y is found, and appending y again stores nothing.
func TestContextIndexMissAfterDeleteAndRecreate(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := start(t, srv, nil)
		c := srv.Client(t)
		for _, id := range []string{"a", "b", "c"} {
			if r := h.Do(t, "POST", base+"/context", fmt.Sprintf(`{"id":%q,"text":"t"}`, id)); r.Status != 201 {
				t.Fatalf("context append %s: %d %s", id, r.Status, r.Body)
			}
		}
		old := lrange(t, c, keys.Context)
		cogneeDelete(t, c, keys.Context, 2)
		cogneeDelete(t, c, keys.Context, 0)
		rpush(t, c, keys.Context, `{"id": "y", "text": "new"}`, old[2])

		if r := h.Do(t, "PATCH", base+"/context/y", `{"text":"seen"}`); r.Status != 200 {
			t.Fatalf("PATCH y: %d %s, want 200", r.Status, r.Body)
		}
		if r := h.Do(t, "POST", base+"/context", `{"id":"y","text":"retry"}`); r.Status != 200 {
			t.Fatalf("append of y again: %d %s, want 200 (already there)", r.Status, r.Body)
		}
		if r := h.Do(t, "DELETE", base+"/context/a", ""); r.Status != 404 {
			t.Fatalf("DELETE a (deleted by the other program): %d, want 404", r.Status)
		}
		if got := strings.Join(listIDs(t, lrange(t, c, keys.Context), "id"), ","); got != "b,y,c" {
			t.Fatalf("context list holds %s, want b,y,c", got)
		}
	})
}

// A session's record answers the entries list's length as entry_count,
// also after Cognee appended or deleted entries directly (its record then
// holds the count of the sidecar's last write).
func TestRecordEntryCountFollowsCogneeWrites(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		keys := srv.Layout().Session("u1", "s1")
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory)
		c := srv.Client(t)
		for i := range 2 {
			if r := h.Do(t, "POST", base+"/entries", fmt.Sprintf(`{"qa_id":"s%d","question":"q","answer":"a"}`, i)); r.Status != 201 {
				t.Fatalf("append: %d %s", r.Status, r.Body)
			}
		}
		count := func() int {
			var rec struct {
				EntryCount int `json:"entry_count"`
			}
			r := h.Do(t, "GET", base, "")
			if r.Status != 200 {
				t.Fatalf("GET the record: %d %s", r.Status, r.Body)
			}
			r.JSON(t, &rec)
			return rec.EntryCount
		}
		rpush(t, c, keys.Entries, cogneeEntry("c0", 10), cogneeEntry("c1", 10))
		if got := count(); got != 4 {
			t.Errorf("entry_count after Cognee appended two: %d, want 4", got)
		}
		cogneeDelete(t, c, keys.Entries, 0)
		if got := count(); got != 3 {
			t.Errorf("entry_count after Cognee deleted one: %d, want 3", got)
		}
		// Listings answer the same count.
		for _, path := range []string{"/v1/users/u1/sessions", "/v1/sessions"} {
			var page struct {
				Sessions []struct {
					EntryCount int `json:"entry_count"`
				} `json:"sessions"`
			}
			r := h.Do(t, "GET", path, "")
			r.JSON(t, &page)
			if r.Status != 200 || len(page.Sessions) != 1 || page.Sessions[0].EntryCount != 3 {
				t.Errorf("GET %s: %d %s, want the one session with entry_count 3", path, r.Status, r.Body)
			}
		}
	})
}
