package messages_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// TestOutcomeAnswers pins the status and the whole body of every answer a
// messages script's outcome other than a plain success turns into (the
// refusals, the failed If-Match, what the session does not hold, a retry),
// so that how the scripts say it (lua/lib/reply.lua) never shows.
func TestOutcomeAnswers(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_MAX_MESSAGES": "4"})
		const s = "/v1/users/alice/sessions/s1"
		post(t, h, `{"id":"a","role":"user","content":"hi"}`, 201)
		post(t, h, `{"id":"b","role":"assistant","content":"","tool_calls":[{"id":"call1","name":"f","arguments":"{}"}]}`, 201)
		post(t, h, `{"id":"c","role":"tool","content":"r","tool_call_id":"call1"}`, 201)
		if rep := h.Do(t, "POST", s+"/compactions", `{"summary":"sum","from_id":"a","to_id":"c"}`); rep.Status != 201 {
			t.Fatalf("compaction: got %s", rep)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s2/messages", `{"id":"x","role":"user","content":"x"}`); rep.Status != 201 {
			t.Fatalf("s2: got %s", rep)
		}
		type call struct{ method, path, body, header, want string }
		for _, c := range []call{
			{"POST", msgs, `{"id":"a","role":"user","content":"other"}`, "",
				`409 {"error":{"code":"id_conflict","message":"message a is already stored with other fields; nothing was written"}}`},
			{"POST", msgs, `{"messages":[{"id":"d","role":"user"},{"id":"e","role":"user"}]}`, "",
				`409 {"error":{"code":"session_full","message":"session alice/s1 holds 3 messages and may hold at most 4 (SESSION_MAX_MESSAGES); nothing was written"}}`},
			{"POST", msgs, `{"id":"d","role":"user","parent_id":"nope"}`, "",
				`400 {"error":{"code":"unknown_parent","message":"field \"parent_id\": session alice/s1 has no message nope"}}`},
			{"POST", msgs, `{"id":"d","role":"user"}`, `"zz"`,
				`412 {"error":{"code":"leaf_moved","message":"the latest leaf of session alice/s1 is c, not the one If-Match names; nothing was written"}}`},
			{"POST", "/v1/users/alice/sessions/s9/messages", `{"id":"d","role":"user"}`, `"zz"`,
				`412 {"error":{"code":"leaf_moved","message":"the latest leaf of session alice/s9 is none, not the one If-Match names; nothing was written"}}`},
			{"PUT", msgs + "/b", `{"role":"assistant","content":"","tool_calls":[{"id":"call1","name":"f","arguments":"{}"}],"parent_id":null}`, "",
				`409 {"error":{"code":"id_conflict","message":"message b is already stored with other fields; nothing was written"}}`},
			{"PUT", msgs + "/d", `{"role":"user","parent_id":"nope"}`, "",
				`400 {"error":{"code":"unknown_parent","message":"field \"parent_id\": session alice/s1 has no message nope"}}`},
			{"PATCH", msgs + "/nope", `{"content":"x"}`, "",
				`404 {"error":{"code":"not_found","message":"session alice/s1 has no message nope"}}`},
			{"GET", msgs + "/nope", "", "",
				`404 {"error":{"code":"not_found","message":"session alice/s1 has no message nope"}}`},
			{"GET", msgs + "/nope/children", "", "",
				`404 {"error":{"code":"not_found","message":"session alice/s1 has no message nope"}}`},
			{"GET", msgs + "?leaf=nope", "", "",
				`404 {"error":{"code":"not_found","message":"session alice/s1 has no message nope"}}`},
			{"GET", msgs + "?after=x", "", "",
				`400 {"error":{"code":"invalid_cursor","message":"message x is not on the path read (before/after must name a message of that path)"}}`},
			{"GET", msgs + "?after=b", "", "",
				`400 {"error":{"code":"invalid_cursor","message":"message b is not on the path read (before/after must name a message of that path)"}}`},
			{"DELETE", msgs + "/nope", "", "",
				`404 {"error":{"code":"not_found","message":"session alice/s1 has no message nope"}}`},
			{"DELETE", msgs + "/b", "", "",
				`409 {"error":{"code":"has_children","message":"message b has children: delete them first, or pass ?subtree=true to delete it with every descendant"}}`},
			{"DELETE", "/v1/users/alice/sessions/s9/messages", "", "",
				`404 {"error":{"code":"not_found","message":"no session alice/s9"}}`},
			{"POST", "/v1/users/alice/sessions/s9/messages/pop", "", "",
				`404 {"error":{"code":"not_found","message":"session alice/s9 has no messages"}}`},
			{"POST", s + "/compactions", `{"summary":"s","from_id":"nope","to_id":"c"}`, "",
				`400 {"error":{"code":"invalid_range","message":"from_id..to_id: the session has no message nope"}}`},
			{"POST", s + "/compactions", `{"summary":"s","from_id":"c","to_id":"a"}`, "",
				`400 {"error":{"code":"invalid_range","message":"from_id..to_id: c is not an ancestor of a (after it, or on another branch)"}}`},
			{"POST", s + "/compactions", `{"summary":"s","from_id":"c","to_id":"c"}`, "",
				`400 {"error":{"code":"splits_tool_call","message":"the range splits tool call call1 from its result: take both or neither"}}`},
			{"POST", s + "/compactions", `{"summary":"s","from_id":"b","to_id":"c"}`, "",
				`409 {"error":{"code":"compaction_overlap","message":"the range partly overlaps compaction CID in force (a compaction may cover earlier ones whole, never in part); nothing was written"}}`},
			// (as the sidecar has always answered it: not "has no message nope")
			{"POST", s + "/fork", `{"at":"nope","session_id":"f1"}`, "",
				`404 {"error":{"code":"not_found","message":"no session alice/s1"}}`},
			{"POST", "/v1/users/alice/sessions/s9/fork", `{"at":"a","session_id":"f1"}`, "",
				`404 {"error":{"code":"not_found","message":"no session alice/s9"}}`},
			{"POST", s + "/fork", `{"at":"a","session_id":"s2"}`, "",
				`409 {"error":{"code":"session_exists","message":"session alice/s2 already exists; nothing was written"}}`},
			{"POST", s + "/split", `{"summary":"so far","session_id":"s2"}`, "",
				`409 {"error":{"code":"session_exists","message":"session alice/s2 already exists; nothing was written"}}`},
			{"POST", "/v1/users/alice/sessions/s9/split", `{"summary":"so far","session_id":"s3"}`, "",
				`404 {"error":{"code":"not_found","message":"no session alice/s9"}}`},
			{"POST", s + "/split", `{"summary":"so far","session_id":"s3"}`, "",
				`201`},
			{"POST", s + "/split", `{"summary":"so far","session_id":"s4"}`, "",
				`409 {"error":{"code":"session_ended","message":"session alice/s1 already ended (completed)"}}`},
		} {
			var header []string
			if c.header != "" {
				header = []string{"If-Match", c.header}
			}
			rep := h.Do(t, c.method, c.path, c.body, header...)
			got := fmt.Sprintf("%d %s", rep.Status, strings.TrimSpace(rep.Body))
			if c.want == "201" {
				got = fmt.Sprint(rep.Status)
			}
			if i := strings.Index(got, "compaction "); i >= 0 && strings.Contains(got, "compaction_overlap") {
				end := strings.Index(got[i+len("compaction "):], " ")
				got = got[:i+len("compaction ")] + "CID" + got[i+len("compaction ")+end:]
			}
			if got != c.want {
				t.Errorf("%s %s %s:\ngot  %s\nwant %s", c.method, c.path, c.body, got, c.want)
			}
		}
		// a retry of a fork and a split by Idempotency-Key: 200, nothing written
		for _, route := range []string{"/fork", "/split"} {
			body := `{"at":"c","session_id":"k` + route[1:] + `"}`
			if route == "/split" {
				body = `{"summary":"so far","session_id":"k-split"}`
				s := "/v1/users/alice/sessions/s2"
				for _, want := range []int{201, 200} {
					if rep := h.Do(t, "POST", s+route, body, "Idempotency-Key", "key"); rep.Status != want {
						t.Fatalf("POST %s: got %s, want %d", route, rep, want)
					}
				}
				continue
			}
			for _, want := range []int{201, 200} {
				if rep := h.Do(t, "POST", s+route, body, "Idempotency-Key", "key"); rep.Status != want {
					t.Fatalf("POST %s: got %s, want %d", route, rep, want)
				}
			}
		}
	})
}
