package messages_test

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// fork forks session s1 of alice at message at into session sid.
func fork(t *testing.T, h *sidecartest.Host, at, sid string) {
	t.Helper()
	if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/fork", `{"at":"`+at+`","session_id":"`+sid+`"}`); rep.Status != 201 {
		t.Fatalf("fork at %s: %s", at, rep)
	}
}

// sortedIDs is hitIDs in sorted order (ties of equal scores come in any
// order).
func sortedIDs(hs []hit) string {
	var out []string
	for _, h := range hs {
		out = append(out, h.SessionID+"/"+h.ID)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// docCount is field f of hash key as a number (0 when absent).
func docCount(t *testing.T, srv *redisstoretest.Server, key, f string) int64 {
	t.Helper()
	c := srv.Client(t)
	v, err := c.Do(t.Context(), c.B().Hget().Key(key).Field(f).Build()).ToString()
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// indexedDocs is how many documents the user's index holds: the sum of
// ' n' of both hashes (entries, messages) of every session listed in the
// user's agent_search_sessions (a session gone counts 0).
func indexedDocs(t *testing.T, srv *redisstoretest.Server, user string) int64 {
	t.Helper()
	c, l, ctx := srv.Client(t), srv.Layout(), t.Context()
	ss, err := c.Do(ctx, c.B().Zrange().Key(l.SearchSessions(user)).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("%s: %v", l.SearchSessions(user), err)
	}
	var sum int64
	for _, s := range ss {
		for _, key := range []string{l.SearchEntryDocs(user, s), l.SearchDocs(user, s)} {
			v, err := c.Do(ctx, c.B().Hmget().Key(key).Field(" n").Build()).ToArray()
			if err != nil {
				t.Fatalf("HMGET %s ' n': %v", key, err)
			}
			if n, err := v[0].AsInt64(); err == nil {
				sum += n
			} else if !rueidis.IsRedisNil(err) {
				t.Fatalf("%s ' n': %v", key, err)
			}
		}
	}
	return sum
}

// A fork's copies are in the search index when the fork answers: found
// under the new session with the original's snippet and time, by the
// user's search and by the fork's own relevance search, and counted among
// the user's indexed documents; messages off the copied path are not
// copied.
func TestForkSearch(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"a","role":"user","content":"How do I deploy the service to staging?"}`, 201)
		// metadata sent as null: stored without it, its fingerprint still the one sent
		post(t, h, `{"id":"b","role":"assistant","content":"Run the deployment pipeline; deploy again after the café opens.","metadata":null}`, 201)
		post(t, h, `{"id":"b2","role":"assistant","content":"Deploy from the other branch","parent_id":"a"}`, 201)
		post(t, h, `{"id":"c","role":"user","parent_id":"b","format":"openai.responses",`+
			`"item":{"text":"first the deploy item","content":[{"type":"input_text","text":"then its deployed parts"}]}}`, 201)
		post(t, h, `{"id":"d","role":"assistant","content":null,"tool_calls":[{"id":"t1","name":"deploy","arguments":"{}"}]}`, 201)
		fork(t, h, "c", "s2")

		user := "/v1/users/alice/search?"
		got := find(t, h, user, "deployed")
		if ids := sortedIDs(got); ids != "s1/a,s1/b,s1/b2,s1/c,s2/a,s2/b,s2/c" {
			t.Fatalf("deployed: got %s, want the copies a, b, c under s2 beside s1's", ids)
		}
		orig := map[string]hit{}
		for _, g := range got {
			if g.SessionID == "s1" {
				orig[g.ID] = g
			}
		}
		for _, g := range got {
			o := orig[g.ID]
			if g.SessionID == "s2" && (g.Snippet != o.Snippet || g.Time != o.Time || g.Kind != "message") {
				t.Errorf("copy %s: got %+v, want the snippet and time of %+v", g.ID, g, o)
			}
		}
		if got := sortedIDs(find(t, h, "/v1/users/alice/sessions/s2/search?rank=relevance&", "deploy")); got != "/a,/b,/c" {
			t.Fatalf("fork's relevance search: got %s, want /a,/b,/c", got)
		}
		if got := sortedIDs(find(t, h, user, "cafe")); got != "s1/b,s2/b" {
			t.Fatalf("cafe: got %s, want s1/b,s2/b", got)
		}
		l := srv.Layout()
		s1, s2 := docCount(t, srv, l.SearchDocs("alice", "s1"), " n"), docCount(t, srv, l.SearchDocs("alice", "s2"), " n")
		if s1 != 4 || s2 != 3 {
			t.Fatalf("documents: s1 %d, s2 %d; want 4 and 3 (d has no text)", s1, s2)
		}
		if n := indexedDocs(t, srv, "alice"); n != s1+s2 {
			t.Fatalf("user's indexed documents: %d, want %d (both sessions')", n, s1+s2)
		}
		// the copies are the fork's own: deleting the source leaves them
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s1", ""); rep.Status != 204 {
			t.Fatal(rep)
		}
		if got := sortedIDs(find(t, h, user, "deploy")); got != "s2/a,s2/b,s2/c" {
			t.Fatalf("after the source's delete: got %s", got)
		}
		if n := indexedDocs(t, srv, "alice"); n != s2 {
			t.Fatalf("user's indexed documents after the source's delete: %d, want %d", n, s2)
		}
	})
}

// A fork of a path longer than one indexing step (250 messages of 61
// terms each: more than 100 messages, and 100 of them more than 4 096
// terms) is indexed whole.
func TestForkSearchLongPath(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		n, words := 250, 60
		if srv.Mini != nil {
			// miniredis's Lua is some 50 times slower than Redis's (more
			// under -race): two steps of small messages there
			n, words = 120, 1
		}
		for from := 0; from < n; from += 100 {
			var b []string
			for i := from; i < min(n, from+100); i++ {
				var w []string
				for j := range words {
					w = append(w, fmt.Sprintf("m%dw%d", i, j))
				}
				b = append(b, fmt.Sprintf(`{"id":"c%d","role":"user","content":"orchard %s"}`, i, strings.Join(w, " ")))
			}
			post(t, h, `{"messages":[`+strings.Join(b, ",")+`]}`, 201)
		}
		fork(t, h, fmt.Sprintf("c%d", n-1), "s2")
		l := srv.Layout()
		if got := docCount(t, srv, l.SearchDocs("alice", "s2"), " n"); got != int64(n) {
			t.Fatalf("fork's documents: got %d, want %d", got, n)
		}
		// the source's batches indexed their first documents in their own
		// scripts and left the rest to the pod's catch-up (in the background)
		got := indexedDocs(t, srv, "alice")
		for deadline := time.Now().Add(10 * time.Second); got != int64(2*n) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			got = indexedDocs(t, srv, "alice")
		}
		if got != int64(2*n) {
			t.Fatalf("user's indexed documents: got %d, want %d", got, 2*n)
		}
		for _, i := range []int{0, 66, 67, 99, 100, 101, 199, 200, n - 1} {
			if i >= n {
				continue
			}
			q := fmt.Sprintf("m%dw%d", i, i%words)
			want := fmt.Sprintf("s1/c%d,s2/c%d", i, i)
			if got := sortedIDs(find(t, h, "/v1/users/alice/search?", q)); got != want {
				t.Errorf("%s: got %s, want %s", q, got, want)
			}
		}
	})
}

// With SEARCH_INDEX=false a fork indexes nothing: the source's messages
// (indexed by a sidecar with the index on) are found, their copies not.
// (A user-wide search through an eager pod would build the user's index,
// copies and all: the search goes through the pod with the index off.)
func TestForkSearchIndexOff(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		on := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		off := start(t, srv, envconf.Env{"SEARCH_INDEX": "false"})
		post(t, on, `{"id":"a","role":"user","content":"apples from the orchard"}`, 201)
		post(t, on, `{"id":"b","role":"user","content":"pears from the orchard"}`, 201)
		fork(t, off, "b", "s2")
		if got := sortedIDs(find(t, off, "/v1/users/alice/search?", "orchard")); got != "s1/a,s1/b" {
			t.Fatalf("orchard: got %s, want only s1's messages", got)
		}
		l := srv.Layout()
		if keys := srv.Keys(t, l.SearchDocs("alice", "s2")); len(keys) != 0 {
			t.Fatalf("fork's documents written with SEARCH_INDEX=false: %v", keys)
		}
		if got := indexedDocs(t, srv, "alice"); got != 2 {
			t.Fatalf("user's indexed documents: got %d, want 2", got)
		}
		// the same fork with the index on is indexed
		fork(t, on, "b", "s3")
		if got := sortedIDs(find(t, off, "/v1/users/alice/search?", "orchard")); got != "s1/a,s1/b,s3/a,s3/b" {
			t.Fatalf("orchard after an indexed fork: got %s", got)
		}
	})
}

// messages_index indexes a message only while its tree node holds the
// fingerprint sent and it has no document yet, only when the session's
// cursor is still where the read began (else {'ok', -1}: read again),
// checks the key types before its first write, and is no activity: the
// record (but for the list of the families the session has, `fams`, and
// of the sets that hold it, `idx`: the core's bookkeeping of the keys it
// made), its TTL and the event stream stay as they were. Over 80 lines:
// one script's answers in sequence, each call made on the state the
// previous ones left (refused, then indexed, then not indexed twice).
func TestMessagesIndexScript(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "false"})
		post(t, h, `{"id":"a","role":"user","content":"apples from the orchard"}`, 201)
		l, c, ctx := srv.Layout(), srv.Client(t), t.Context()
		keys := messages.SessionKeys(l, "alice", "s1")
		node, err := c.Do(ctx, c.B().Hget().Key(keys.Tree).Field("a").Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		fp := node[strings.LastIndexByte(node, '\t')+1:]
		seq, err := c.Do(ctx, c.B().Zscore().Key(keys.Order).Member("a").Build()).AsFloat64()
		if err != nil {
			t.Fatal(err)
		}
		cursor := strconv.FormatFloat(seq, 'f', -1, 64) // the read's cursor after a
		doc := search.Analyze("apples from the orchard")
		st := sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600})
		run := func(from, fp string) (int64, error) {
			msg, err := st.Exec(ctx, messages.MessagesIndex, "alice", "s1", from, cursor, "1",
				"a", fp, doc.Spec(), strconv.Itoa(doc.Length), "")
			if err != nil {
				return 0, err
			}
			arr, err := msg.ToArray()
			if err != nil || len(arr) != 2 {
				t.Fatalf("reply %v (%v)", msg, err)
			}
			return arr[1].AsInt64()
		}
		record, events := l.Session("alice", "s1").Record, l.SessionEvents("alice", "s1")
		state := func() string {
			rec, _ := c.Do(ctx, c.B().Hgetall().Key(record).Build()).AsStrMap()
			delete(rec, "fams")
			delete(rec, "idx")
			n, _ := c.Do(ctx, c.B().Xlen().Key(events).Build()).AsInt64()
			ttl, _ := c.Do(ctx, c.B().Ttl().Key(record).Build()).AsInt64()
			return fmt.Sprintf("%v events=%d ttl=%d", rec, n, ttl)
		}
		apples := func(want string) {
			t.Helper()
			if got := hitIDs(find(t, h, "/v1/users/alice/search?", "apples")); got != want {
				t.Fatalf("apples: got %q, want %q", got, want)
			}
		}
		docs, list := l.SearchDocs("alice", "s1"), l.SearchSessions("alice")
		index := func() []string { return redisstoretest.Snapshot(t, c, docs, list) }
		before := state()
		if n, err := run("0", "not-its-fingerprint"); err != nil || n != 0 {
			t.Fatalf("stale fingerprint: got %d (%v), want 0 indexed", n, err)
		}
		apples("")
		// the cursor moved on since a read from the start: nothing written
		was := index()
		if n, err := run("0", fp); err != nil || n != -1 {
			t.Fatalf("cursor moved: got %d (%v), want -1", n, err)
		}
		if got := index(); !slices.Equal(got, was) {
			t.Fatalf("cursor moved: index\n %q\nwant unchanged\n %q", got, was)
		}
		// keys of another type: refused before the first write
		for _, bad := range []struct{ key, want, from string }{{list, "zset", cursor}, {docs, "hash", "0"}} {
			for _, cmd := range []rueidis.Completed{c.B().Del().Key(bad.key).Build(), c.B().Set().Key(bad.key).Value("x").Build()} {
				if err := c.Do(ctx, cmd).Error(); err != nil {
					t.Fatal(err)
				}
			}
			was := index()
			if _, err := run(bad.from, fp); err == nil || !strings.Contains(err.Error(), bad.key) ||
				!strings.Contains(err.Error(), "holds a string where the sidecar keeps a "+bad.want) {
				t.Fatalf("%s of another type: got %v, want the wrong type refused", bad.key, err)
			}
			if got := index(); !slices.Equal(got, was) {
				t.Fatalf("a refused call wrote\n %q\nwant\n %q", got, was)
			}
			if err := c.Do(ctx, c.B().Del().Key(bad.key).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		apples("")
		if n, err := run("0", fp); err != nil || n != 1 {
			t.Fatalf("its fingerprint: got %d (%v), want 1 indexed", n, err)
		}
		apples("s1/a")
		// a message with a document already is not indexed twice
		if n, err := run(cursor, fp); err != nil || n != 0 {
			t.Fatalf("indexed already: got %d (%v), want 0", n, err)
		}
		if n := indexedDocs(t, srv, "alice"); n != 1 {
			t.Fatalf("indexed documents: %d, want 1", n)
		}
		if after := state(); after != before {
			t.Fatalf("session changed by indexing:\n %s\nwant\n %s", after, before)
		}
	})
}

// An indexing failure after the fork does not fail it: 201, the copies
// stored, their batch left out of the index (failed before any write).
// Here another program spoiled the fork's documents hash before the fork:
// its cursor ' mseq' is not a number, so the catch-up's first read fails
// (every type is right, so the fork passes its own checks; a wrong-typed
// index key refuses the fork itself: TestSearchIndexKeyWrongType).
func TestForkIndexFailureKeepsFork(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		post(t, h, `{"id":"a","role":"user","content":"zebras in the orchard"}`, 201)
		post(t, h, `{"id":"b","role":"user","content":"pears in the orchard"}`, 201)
		l, c := srv.Layout(), srv.Client(t)
		docs := l.SearchDocs("alice", "s2")
		for _, cmd := range []rueidis.Completed{
			c.B().Hset().Key(docs).FieldValue().FieldValue(" mseq", "x").Build(),
			c.B().Expire().Key(docs).Seconds(600).Build(),
		} {
			if err := c.Do(t.Context(), cmd).Error(); err != nil {
				t.Fatal(err)
			}
		}
		was := redisstoretest.Snapshot(t, c, docs, l.SearchSessions("alice"))
		fork(t, h, "b", "s2")
		if got := ids(pathOf(t, h, "s2", "")); got != "a,b" {
			t.Fatalf("fork's path: %s", got)
		}
		if got := sortedIDs(find(t, h, "/v1/users/alice/search?", "pears")); got != "s1/b" {
			t.Fatalf("pears: got %s, want s1/b only (the copies' batch failed)", got)
		}
		if got := redisstoretest.Snapshot(t, c, docs, l.SearchSessions("alice")); !slices.Equal(got, was) {
			t.Fatalf("the fork's index:\n %q\nwant unchanged\n %q", got, was)
		}
		if n := indexedDocs(t, srv, "alice"); n != 2 {
			t.Fatalf("user's indexed documents: %d, want 2 (s1's)", n)
		}
	})
}

// A split's continuation starts with its summary as a system message,
// indexed by the split's own script.
func TestSplitSearch(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		post(t, h, `{"id":"a","role":"user","content":"pears in the orchard"}`, 201)
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/split", `{"summary":"We planned the orchard.","session_id":"s1-2"}`); rep.Status != 201 {
			t.Fatalf("split: %s", rep)
		}
		sessions := map[string]int{}
		for _, g := range find(t, h, "/v1/users/alice/search?", "orchard") {
			sessions[g.SessionID]++
		}
		if len(sessions) != 2 || sessions["s1"] != 1 || sessions["s1-2"] != 1 {
			t.Fatalf("orchard: hits by session %v, want s1's message and the continuation's summary", sessions)
		}
		if got := find(t, h, "/v1/users/alice/search?", "planned"); len(got) != 1 || got[0].SessionID != "s1-2" || got[0].Snippet != "We planned the orchard." {
			t.Fatalf("planned: got %+v, want the continuation's summary", got)
		}
	})
}

// Messages of the fork changed while its copies are being indexed keep
// the document of their last write: 8 callers PATCH every copy (newest
// first, each as soon as it exists) while the fork indexes them (oldest
// first); after all, each copy is found by its new words only, never by
// the words its copy had when the fork read it.
func TestForkSearchConcurrentWrites(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		const n = 250
		for from := 0; from < n; from += 100 {
			var b []string
			for i := from; i < min(n, from+100); i++ {
				b = append(b, fmt.Sprintf(`{"id":"c%d","role":"user","content":"orchard m%dold"}`, i, i))
			}
			post(t, h, `{"messages":[`+strings.Join(b, ",")+`]}`, 201)
		}
		var wg sync.WaitGroup
		forked := make(chan sidecartest.Reply, 1)
		wg.Go(func() {
			forked <- h.Do(t, "POST", "/v1/users/alice/sessions/s1/fork", fmt.Sprintf(`{"at":"c%d","session_id":"s2"}`, n-1))
		})
		errs := make(chan string, n)
		for g := range 8 {
			wg.Go(func() {
				for i := n - 1 - g; i >= 0; i -= 8 {
					for {
						rep := h.Do(t, "PATCH", fmt.Sprintf("/v1/users/alice/sessions/s2/messages/c%d", i), fmt.Sprintf(`{"content":"orchard m%dnew"}`, i))
						if rep.Status == 200 {
							break
						}
						if rep.Status != 404 {
							errs <- fmt.Sprintf("PATCH c%d: %s", i, rep)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatal(e)
		}
		if rep := <-forked; rep.Status != 201 {
			t.Fatalf("fork: %s", rep)
		}
		for i := range n {
			if got := sortedIDs(find(t, h, "/v1/users/alice/search?", fmt.Sprintf("m%dold", i))); got != fmt.Sprintf("s1/c%d", i) {
				t.Errorf("m%dold: got %s, want s1's message only", i, got)
			}
			if got := sortedIDs(find(t, h, "/v1/users/alice/search?", fmt.Sprintf("m%dnew", i))); got != fmt.Sprintf("s2/c%d", i) {
				t.Errorf("m%dnew: got %s, want the fork's copy only", i, got)
			}
		}
		if got := indexedDocs(t, srv, "alice"); got != int64(2*n) {
			t.Fatalf("user's indexed documents: got %d, want %d", got, 2*n)
		}
	})
}
