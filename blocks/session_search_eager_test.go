package blocks_test

import (
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
)

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
