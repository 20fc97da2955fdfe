package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// Redis commands per write, counted by Redis itself (INFO commandstats:
// every command a script runs counts, the FCALL that runs it does not) on
// a real redis-server, with the product's default settings
// (SESSION_EVENTS=watched with nobody watching, SEARCH_INDEX=on-demand for
// a user who never searched): what a write costs the shared Redis, in
// proportion to its own job. The counts are deterministic: the second
// write of a session lands within the grain of its first (60 s), so it
// writes no lifecycle bookkeeping.
const (
	maxEntryAppendNew      = 15 // a new session's first entry
	maxEntryAppend         = 8  // an entry to an existing session
	maxMessageAppendNew    = 20 // a new session's first message
	maxMessageAppend       = 12 // a message to an existing session
	maxMessageAppendKeyed  = 12 // the same with an Idempotency-Key, as the clients send
	maxMessageAppendBranch = 12 // a message to another parent than the latest leaf
)

// notCounted are commands that are no part of a write: the script call
// itself, the sidecar's health checks and script loading, and this test's
// own INFO and CONFIG RESETSTAT.
var notCounted = map[string]bool{
	"fcall": true, "fcall_ro": true, "evalsha": true, "eval": true, "ping": true, "info": true,
	"config|resetstat": true, "function|list": true, "function|load": true, "script|exists": true,
	"script|load": true, "hello": true, "client|setinfo": true, "client|setname": true,
}

// commandsOf runs do and returns the commands Redis ran for it, by name.
func commandsOf(t *testing.T, c rueidis.Client, do func()) (int, map[string]int) {
	t.Helper()
	if err := c.Do(t.Context(), c.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	do()
	total, by := 0, map[string]int{}
	for name, n := range commandCalls(t, c) {
		if notCounted[name] {
			continue
		}
		total += n
		by[name] = n
	}
	return total, by
}

func TestWriteCommandCounts(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := sidecartest.Start(t, srv, nil, modules.All()...)
	c := srv.Client(t)
	check := func(what string, most int, method, path, body string, header ...string) {
		t.Helper()
		var status int
		n, by := commandsOf(t, c, func() {
			r := h.Do(t, method, path, body, header...)
			status = r.Status
		})
		if status/100 != 2 {
			t.Fatalf("%s: %d", what, status)
		}
		t.Logf("%s: %d commands %v", what, n, by)
		if n > most {
			t.Errorf("%s: %d Redis commands, want at most %d: %v", what, n, most, by)
		}
	}
	entries := "/v1/users/alice/sessions/s1/entries"
	check("entry append, new session", maxEntryAppendNew, "POST", entries, `{"question":"q","answer":"a","qa_id":"q1"}`)
	check("entry append", maxEntryAppend, "POST", entries, `{"question":"q","answer":"a","qa_id":"q2"}`)

	msgs := "/v1/users/alice/sessions/s2/messages"
	check("message append, new session", maxMessageAppendNew, "POST", msgs, `{"id":"m1","role":"user","content":"hi"}`,
		"Idempotency-Key", "k1")
	check("message append", maxMessageAppend, "POST", msgs, `{"id":"m2","role":"assistant","content":"hello"}`)
	check("message append with an Idempotency-Key", maxMessageAppendKeyed, "POST", msgs,
		`{"id":"m3","role":"user","content":"more"}`, "Idempotency-Key", "k3")
	for i := 4; i < 40; i++ { // a deeper path: the jump pointers of a long one
		body := fmt.Sprintf(`{"id":"m%d","role":"user","content":"x"}`, i)
		check("message append, depth "+fmt.Sprint(i), maxMessageAppendKeyed, "POST", msgs, body, "Idempotency-Key", fmt.Sprintf("k%d", i))
	}
	check("message append under another parent", maxMessageAppendBranch, "POST", msgs,
		`{"id":"b1","role":"user","content":"branch","parent_id":"m2"}`)
	if r := h.Do(t, "GET", msgs, ""); r.Status != http.StatusOK || !strings.Contains(r.Body, `"b1"`) {
		t.Fatalf("the messages after the appends: %s", r)
	}
}
