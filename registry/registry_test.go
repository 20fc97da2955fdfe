package registry_test

import (
	"bufio"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentsidecar/agentsidecar/client"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
)

type record = client.SessionRecord

func start(t *testing.T, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	return sidecartest.Start(t, srv, env, sessions.Factory, usage.Factory, registry.Factory)
}

// want checks the status of rep and decodes its record.
func want(t *testing.T, rep sidecartest.Reply, status int) record {
	t.Helper()
	if rep.Status != status {
		t.Fatalf("got %d %s, want %d", rep.Status, rep.Body, status)
	}
	var r record
	if status < 300 {
		rep.JSON(t, &r)
	}
	return r
}

// members returns the members of sorted set key.
func members(t *testing.T, srv *redisstoretest.Server, key string) []string {
	t.Helper()
	c := srv.Client(t)
	got, err := c.Do(t.Context(), c.B().Zrange().Key(key).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("zrange %s: %v", key, err)
	}
	return got
}

// hash returns the hash at key.
func hash(t *testing.T, srv *redisstoretest.Server, key string) map[string]string {
	t.Helper()
	c := srv.Client(t)
	got, err := c.Do(t.Context(), c.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		t.Fatalf("hgetall %s: %v", key, err)
	}
	return got
}

func TestCreate(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		body := `{"session_id":"s1","title":"PR review","metadata":{"repo":"myorg/myrepo","pr":"42"}}`
		r := want(t, h.Do(t, "POST", "/v1/users/alice/sessions", body), 201)
		if r.SessionID != "s1" || r.Status != "running" || r.Title == nil || *r.Title != "PR review" ||
			!maps.Equal(r.Metadata, map[string]string{"repo": "myorg/myrepo", "pr": "42"}) || r.EndReason != nil || r.Summary != nil {
			t.Fatalf("record: %+v", r)
		}
		if r.StartedAt == nil || r.TTLSeconds == nil || *r.TTLSeconds <= 0 {
			t.Errorf("started_at %v ttl %v", r.StartedAt, r.TTLSeconds)
		}
		// The indexes, user's and across users, by (key, value).
		if got := members(t, srv, l.MetaIndex("alice", "repo", "myorg/myrepo")); len(got) != 1 || got[0] != "s1" {
			t.Errorf("user index: %v", got)
		}
		if got := members(t, srv, l.MetaGlobal(l.Bucket("alice"), "pr", "42")); len(got) != 1 || got[0] != "alice:s1" {
			t.Errorf("global index: %v", got)
		}
		// The indexes live as long as the session: they carry its TTL.
		c := srv.Client(t)
		for _, k := range []string{l.MetaIndex("alice", "repo", "myorg/myrepo"), l.MetaGlobal(l.Bucket("alice"), "pr", "42")} {
			if ttl, err := c.Do(t.Context(), c.B().Ttl().Key(k).Build()).AsInt64(); err != nil || ttl <= 0 || ttl > *r.TTLSeconds {
				t.Errorf("TTL of %s: %d %v, want (0, %d]", k, ttl, err, *r.TTLSeconds)
			}
		}
		// An existing session: 409, nothing changed.
		before := hash(t, srv, l.Session("alice", "s1").Record)
		rep := h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","title":"other"}`)
		if rep.Status != 409 || rep.Code() != "session_exists" {
			t.Fatalf("again: %d %s", rep.Status, rep.Body)
		}
		if after := hash(t, srv, l.Session("alice", "s1").Record); !maps.Equal(before, after) {
			t.Errorf("record changed by a refused create:\n%v\n%v", before, after)
		}
		// A session Cognee (or any write) started also exists.
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions/s2/entries", `{"question":"q","answer":"a","context":""}`), 201)
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s2"}`); rep.Status != 409 {
			t.Errorf("create over an entries-only session: %d", rep.Status)
		}
	})
}

func TestCreateIdempotent(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		first := want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"title":"t"}`, "Idempotency-Key", "k-1"), 201)
		again := want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"title":"t"}`, "Idempotency-Key", "k-1"), 200)
		if first.SessionID != again.SessionID || len(first.SessionID) != 36 || strings.ToLower(first.SessionID) != first.SessionID {
			t.Errorf("ids %q %q", first.SessionID, again.SessionID)
		}
		other := want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"title":"t"}`, "Idempotency-Key", "k-2"), 201)
		plain := want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{}`), 201)
		if other.SessionID == first.SessionID || plain.SessionID == first.SessionID {
			t.Errorf("distinct creates share an id: %q %q %q", first.SessionID, other.SessionID, plain.SessionID)
		}
		// An explicit id with a key: the retry is 200, another key 409.
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"x"}`, "Idempotency-Key", "k-3"), 201)
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"x"}`, "Idempotency-Key", "k-3"), 200)
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"x"}`, "Idempotency-Key", "k-4"), 409)
	})
}

func TestCreateBadInput(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		var many []string
		for i := range registry.MaxMetadataKeys + 1 {
			many = append(many, fmt.Sprintf(`"k%d":"v"`, i))
		}
		for _, c := range []struct{ name, body, field string }{
			{"title too long", `{"title":"` + strings.Repeat("é", registry.MaxTitleLength+1) + `"}`, `"title"`},
			{"title not a string", `{"title":5}`, `title`},
			{"bad key", `{"metadata":{"a b":"v"}}`, `"a b"`},
			{"long key", `{"metadata":{"` + strings.Repeat("k", 65) + `":"v"}}`, strings.Repeat("k", 65)},
			{"long value", `{"metadata":{"k":"` + strings.Repeat("v", registry.MaxMetaValueChars+1) + `"}}`, `"metadata.k"`},
			{"null value", `{"metadata":{"k":null}}`, `"metadata.k"`},
			{"value not a string", `{"metadata":{"k":1}}`, `metadata`},
			{"too many keys", `{"metadata":{` + strings.Join(many, ",") + `}}`, `"metadata"`},
			{"bad session_id", `{"session_id":"a:b"}`, `"session_id"`},
			{"unknown field", `{"nope":1}`, `nope`},
		} {
			rep := h.Do(t, "POST", "/v1/users/alice/sessions", c.body)
			if rep.Status != 400 || !strings.Contains(rep.Body, strings.ReplaceAll(c.field, `"`, `\"`)) {
				t.Errorf("%s: %d %s, want 400 naming %s", c.name, rep.Status, rep.Body, c.field)
			}
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions", `{}`, "Idempotency-Key", "bad key"); rep.Status != 400 || !strings.Contains(rep.Body, "Idempotency-Key") {
			t.Errorf("bad key: %d %s", rep.Status, rep.Body)
		}
		if n := srv.DBSize(t); n != 0 {
			t.Errorf("%d keys written by refused creates", n)
		}
	})
}

func TestUpdateMergePatch(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","title":"t","metadata":{"a":"1","b":"2"}}`), 201)
		r := want(t, h.Do(t, "PATCH", "/v1/users/alice/sessions/s1", `{"metadata":{"b":null,"c":"3","a":"1"}}`), 200)
		if !maps.Equal(r.Metadata, map[string]string{"a": "1", "c": "3"}) || r.Title == nil || *r.Title != "t" {
			t.Fatalf("after patch: %+v %v", r.Metadata, r.Title)
		}
		if got := members(t, srv, l.MetaIndex("alice", "b", "2")); len(got) != 0 {
			t.Errorf("b=2 still indexed: %v", got)
		}
		if got := members(t, srv, l.MetaGlobal(l.Bucket("alice"), "c", "3")); len(got) != 1 {
			t.Errorf("c=3 not indexed: %v", got)
		}
		before := hash(t, srv, l.Session("alice", "s1").Record)
		r = want(t, h.Do(t, "PATCH", "/v1/users/alice/sessions/s1", `{"metadata":{}}`), 200)
		if !maps.Equal(r.Metadata, map[string]string{"a": "1", "c": "3"}) {
			t.Errorf("{} changed metadata: %v", r.Metadata)
		}
		if after := hash(t, srv, l.Session("alice", "s1").Record); after["metadata"] != before["metadata"] {
			t.Errorf("{} rewrote metadata: %q -> %q", before["metadata"], after["metadata"])
		}
		r = want(t, h.Do(t, "PATCH", "/v1/users/alice/sessions/s1", `{"title":null}`), 200)
		if r.Title != nil {
			t.Errorf("title not removed: %q", *r.Title)
		}
		r = want(t, h.Do(t, "PATCH", "/v1/users/alice/sessions/s1", `{"title":"new","metadata":null}`), 200)
		if *r.Title != "new" || len(r.Metadata) != 0 {
			t.Errorf("title %v metadata %v", r.Title, r.Metadata)
		}
		if got := members(t, srv, l.MetaIndex("alice", "a", "1")); len(got) != 0 {
			t.Errorf("a=1 still indexed: %v", got)
		}
		// Over the cap after the merge: 400, nothing written.
		var many []string
		for i := range registry.MaxMetadataKeys + 1 {
			many = append(many, fmt.Sprintf(`"k%d":"v"`, i))
		}
		before = hash(t, srv, l.Session("alice", "s1").Record)
		if rep := h.Do(t, "PATCH", "/v1/users/alice/sessions/s1", `{"metadata":{`+strings.Join(many, ",")+`}}`); rep.Status != 400 || !strings.Contains(rep.Body, "metadata") {
			t.Errorf("33 keys: %d %s", rep.Status, rep.Body)
		}
		if after := hash(t, srv, l.Session("alice", "s1").Record); !maps.Equal(before, after) {
			t.Errorf("refused patch wrote: %v -> %v", before, after)
		}
		if rep := h.Do(t, "PATCH", "/v1/users/alice/sessions/nope", `{"title":"x"}`); rep.Status != 404 || rep.Code() != "not_found" {
			t.Errorf("unknown session: %d %s", rep.Status, rep.Body)
		}
		if rep := h.Do(t, "PATCH", "/v1/users/alice/sessions/s1", `{"title":7}`); rep.Status != 400 || !strings.Contains(rep.Body, "title") {
			t.Errorf("title 7: %d %s", rep.Status, rep.Body)
		}
	})
}

func TestCompleteWithSummary(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1"}`), 201)
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s2"}`), 201)
		r := want(t, h.Do(t, "POST", "/v1/users/alice/sessions/s1/complete", `{"summary":"Did the review."}`), 200)
		if r.Status != "completed" || r.Summary == nil || *r.Summary != "Did the review." || r.SummaryAutoGenerated || r.EndReason == nil || *r.EndReason != "completed" {
			t.Errorf("completed: %+v", r)
		}
		r = want(t, h.Do(t, "POST", "/v1/users/alice/sessions/s2/fail", ""), 200)
		if r.Summary != nil || r.EndReason == nil || *r.EndReason != "failed" {
			t.Errorf("failed: %+v", r)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/complete", `{"summary":"`+strings.Repeat("x", registry.MaxSummaryLength+1)+`"}`); rep.Status != 400 || !strings.Contains(rep.Body, "summary") {
			t.Errorf("long summary: %d %s", rep.Status, rep.Body)
		}
	})
}

func TestDeleteDropsMetadataIndexes(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		l := srv.Layout()
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","metadata":{"a":"1"}}`), 201)
		if rep := h.Do(t, "DELETE", "/v1/users/alice/sessions/s1", ""); rep.Status != 204 {
			t.Fatalf("delete: %d %s", rep.Status, rep.Body)
		}
		for _, k := range []string{l.MetaIndex("alice", "a", "1"), l.MetaGlobal(l.Bucket("alice"), "a", "1")} {
			if got := members(t, srv, k); len(got) != 0 {
				t.Errorf("%s after delete: %v", k, got)
			}
		}
	})
}

// Concurrent metadata patches from two sidecars leave the session in
// exactly the index of its final value.
func TestUpdateConcurrentIndexes(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		hosts := []*sidecartest.Host{start(t, srv, nil), start(t, srv, nil)}
		l := srv.Layout()
		want(t, hosts[0].Do(t, "POST", "/v1/users/alice/sessions", `{"session_id":"s1","metadata":{"k":"v0"}}`), 201)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				rep := hosts[i%2].Do(t, "PATCH", "/v1/users/alice/sessions/s1", fmt.Sprintf(`{"metadata":{"k":"v%d","i%d":"x"}}`, i, i))
				if rep.Status != 200 {
					t.Errorf("patch %d: %d %s", i, rep.Status, rep.Body)
				}
			})
		}
		wg.Wait()
		r := want(t, hosts[1].Do(t, "GET", "/v1/users/alice/sessions/s1", ""), 200)
		if len(r.Metadata) != 21 {
			t.Errorf("metadata %v: want k and 20 i<n>", r.Metadata)
		}
		for i := range 21 {
			v := fmt.Sprintf("v%d", i)
			n := len(members(t, srv, l.MetaIndex("alice", "k", v))) + len(members(t, srv, l.MetaGlobal(l.Bucket("alice"), "k", v)))
			if final := v == r.Metadata["k"]; (final && n != 2) || (!final && n != 0) {
				t.Errorf("k=%s: %d index members (final value %s)", v, n, r.Metadata["k"])
			}
		}
	})
}

// A session only Cognee wrote (its list, no record) can be titled and
// tagged: the patch creates its record, and the metadata filter finds it.
func TestUpdateCogneeSession(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		entry := `{"time": "2026-01-02T03:04:05.000006+00:00", "qa_id": "q1", "question": "Q?", "context": "", "answer": "A", "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`
		if err := c.Do(t.Context(), c.B().Rpush().Key(srv.Layout().Session("alice", "cg").Entries).Element(entry).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		r := want(t, h.Do(t, "PATCH", "/v1/users/alice/sessions/cg", `{"title":"From Cognee","metadata":{"src":"cognee"}}`), 200)
		if r.DerivedFromList || r.EntryCount != 1 || *r.Title != "From Cognee" || r.Status != "running" {
			t.Errorf("record: %+v", r)
		}
		got, _ := pages(t, h, "/v1/users/alice/sessions", map[string][]string{"metadata.src": {"cognee"}})
		if !slices.Equal(got, []string{"alice/cg"}) {
			t.Errorf("listing: %v", got)
		}
	})
}

// Routes whose every field is optional take no body as {}, whether the
// client sent Content-Length: 0 or a chunked body of no bytes (a client
// streaming an empty body); whitespace alone is no body too.
func TestNoBodyWhenChunked(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		send := func(method, path, body string) int {
			t.Helper()
			// written by hand: net/http sends an empty body as Content-Length: 0
			conn, err := net.Dial("tcp", strings.TrimPrefix(h.API, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			chunk := "0\r\n\r\n"
			if body != "" {
				chunk = fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)
			}
			fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%s", method, path, chunk)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		for _, c := range []struct {
			method, path, body string
			want               int
		}{
			{"POST", "/v1/users/u1/sessions", "", 201},
			{"POST", "/v1/users/u1/active-session", " \n", 200}, // reuses the session just created
			{"POST", "/v1/users/u1/active-session/end", "", 200},
			{"POST", "/v1/users/u1/sessions", `{"session_id":"s9"}`, 201},
			{"POST", "/v1/users/u1/sessions/s9/complete", "", 200},
		} {
			if got := send(c.method, c.path, c.body); got != c.want {
				t.Errorf("%s %s %q chunked: %d, want %d", c.method, c.path, c.body, got, c.want)
			}
		}
	})
}
