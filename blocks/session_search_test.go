package blocks_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
)

// session_search: offered once the user has a session, in both
// providers' shapes, in any session of the user (an empty one too) and
// before any search made the user's index (SEARCH_INDEX=on-demand); the
// first call builds the index, as a first search does, and finds the
// user's messages of every session by stemmed words; a model's mistakes
// are error results, not HTTP errors.
func TestSessionSearchTool(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory, messages.Factory, blocks.Factory)
		names := func(format string, session ...string) []string {
			t.Helper()
			s := "s1"
			if len(session) > 0 {
				s = session[0]
			}
			var out struct {
				Tools []struct {
					Name     string `json:"name"`
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				} `json:"tools"`
			}
			h.Do(t, "GET", "/v1/users/alice/sessions/"+s+"/tools?format="+format, "").JSON(t, &out)
			var got []string
			for _, tl := range out.Tools {
				got = append(got, tl.Name+tl.Function.Name)
			}
			return got
		}
		if got := names("openai"); len(got) != 0 {
			t.Fatalf("no blocks, no messages: tools %v, want none", got)
		}
		for _, m := range []struct{ session, body string }{
			{"s1", `{"id":"m1","role":"user","content":"The deployment failed on Tuesday"}`},
			{"s2", `{"id":"m2","role":"assistant","content":"We deployed the fix to production"}`},
			{"s2", `{"id":"m3","role":"user","content":"Thanks, what about the dog?"}`},
		} {
			if r := h.Do(t, "POST", "/v1/users/alice/sessions/"+m.session+"/messages", m.body); r.Status != 201 {
				t.Fatalf("append: %d %s", r.Status, r.Body)
			}
		}
		if keys := srv.Keys(t, "agent_search_*"); len(keys) != 0 {
			t.Fatalf("search keys before any search: %v", keys)
		}
		for _, f := range []string{"openai", "anthropic"} {
			for _, s := range []string{"s1", "empty"} {
				if got := names(f, s); len(got) != 1 || got[0] != "session_search" {
					t.Errorf("%s tools of %s, alice with messages and no index: %v, want [session_search]", f, s, got)
				}
			}
		}
		r := call(t, h, "session_search", `{"arguments":{"query":"deploy"}}`)
		if r.IsError || !strings.Contains(r.Result, "session s1, message m1") || !strings.Contains(r.Result, "session s2, message m2") ||
			strings.Contains(r.Result, "m3") || !strings.Contains(r.Result, "deploy") {
			t.Errorf("deploy: %+v, want m1 and m2 (stemmed: deployment, deployed), not m3", r)
		}
		args, _ := json.Marshal(`{"query":"dog","limit":1}`) // as the JSON string a model produced
		if r := call(t, h, "session_search", `{"arguments":`+string(args)+`}`); r.IsError || strings.Count(r.Result, "\n") != 0 || !strings.Contains(r.Result, "m3") {
			t.Errorf("dog, limit 1: %+v", r)
		}
		for body, want := range map[string]string{
			`{"arguments":{}}`:                            "needs \"query\"",
			`{"arguments":{"query":"the"}}`:               "no word the search can use",
			`{"arguments":{"query":"x","limit":11}}`:      "limit",
			`{"arguments":{"query":"x","extra":true}}`:    "Invalid arguments",
			`{"arguments":{"query":"zebras everywhere"}}`: "No message",
		} {
			r := call(t, h, "session_search", body)
			if !strings.Contains(r.Result, want) || r.IsError == (want == "No message") {
				t.Errorf("%s: %+v, want a result saying %q (is_error %v)", body, r, want, want != "No message")
			}
		}
	})
}

// Under SEARCH_INDEX=eager session_search is offered in any session of a
// user once the user has indexed documents (the user's list of sessions
// with documents), and not before.
func TestSessionSearchToolEager(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"}, sessions.Factory, usage.Factory, messages.Factory, blocks.Factory)
		offered := func() bool {
			t.Helper()
			var out struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			h.Do(t, "GET", "/v1/users/bob/sessions/empty/tools?format=anthropic", "").JSON(t, &out)
			return slices.ContainsFunc(out.Tools, func(tl struct {
				Name string `json:"name"`
			}) bool {
				return tl.Name == "session_search"
			})
		}
		if offered() {
			t.Fatal("session_search offered before bob has any document")
		}
		if r := h.Do(t, "POST", "/v1/users/bob/sessions/other/messages", `{"id":"m1","role":"user","content":"The deployment failed"}`); r.Status != 201 {
			t.Fatalf("append: %s", r)
		}
		if !offered() {
			t.Fatal("session_search not offered once bob has indexed messages")
		}
	})
}
