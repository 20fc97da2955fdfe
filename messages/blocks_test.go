package messages_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/blocks"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// With the blocks module: a fork copies the session's context blocks, and
// the frozen system prompt's tokens count toward compaction_suggested.
func TestForkBlocksAndPromptTokens(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, envconf.Env{"SESSION_COMPACT_AFTER_TOKENS": "20"}, append(messagesModules(), blocks.Factory)...)
		post(t, h, `{"id":"a","role":"user","content":"word word word word"}`, 201) // 10 tokens
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s1/blocks/task", `{"content":"`+strings.Repeat("plan ", 40)+`"}`); rep.Status != 201 {
			t.Fatalf("put block: %s", rep)
		}
		if path(t, h, "").CompactionSuggested {
			t.Fatal("suggested before the prompt is frozen (10 tokens of 20)")
		}
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/s1/system-prompt?frozen=true", ""); rep.Status != 200 {
			t.Fatalf("freeze: %s", rep)
		}
		if !path(t, h, "").CompactionSuggested {
			t.Fatal("not suggested with the frozen prompt's tokens")
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/fork", `{"at":"a","session_id":"s2"}`); rep.Status != 201 {
			t.Fatalf("fork: %s", rep)
		}
		rep := h.Do(t, "GET", "/v1/users/alice/sessions/s2/blocks/task", "")
		if rep.Status != 200 || !strings.Contains(rep.Body, "plan plan") {
			t.Fatalf("forked block: %s", rep)
		}
	})
}
