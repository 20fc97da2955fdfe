package messages_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// Start-or-reuse's auto-summary and recent items take user messages as
// well as Q&A questions, newest by time, oldest first in the summary.
func TestAutoSummaryAndRecentWithMessages(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_ABANDON_AFTER_SECONDS": "1"})
		old := "/v1/users/bob/sessions/old"
		if rep := h.Do(t, "POST", old+"/entries", `{"question":"q one","answer":"a","context":""}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		for i, body := range []string{
			`{"id":"u1","role":"user","content":"message two"}`,
			`{"id":"a1","role":"assistant","content":"not in the summary"}`,
			`{"id":"u2","role":"user","content":"message three"}`,
		} {
			if srv.Mini != nil { // distinct times on miniredis's clock
				srv.Mini.SetTime(time.Now().Add(time.Duration(i+1) * time.Millisecond))
			}
			if rep := h.Do(t, "POST", old+"/messages", body); rep.Status != 201 {
				t.Fatal(rep)
			}
		}
		if srv.Mini != nil {
			srv.Mini.SetTime(time.Now().Add(2 * time.Second))
		} else {
			time.Sleep(1100 * time.Millisecond)
		}
		rep := h.Do(t, "POST", "/v1/users/bob/active-session", `{}`)
		var got struct {
			Closed []string         `json:"closed"`
			Recent []map[string]any `json:"recent"`
		}
		rep.JSON(t, &got)
		if rep.Status != 201 || len(got.Closed) != 1 {
			t.Fatalf("start: %s", rep)
		}
		var rec record
		h.Do(t, "GET", old, "").JSON(t, &rec)
		if want := "Auto-summary: q one; message two; message three"; rec.Summary == nil || *rec.Summary != want {
			t.Fatalf("summary %v, want %q", rec.Summary, want)
		}
		if len(got.Recent) != 4 || got.Recent[0]["kind"] != "message" || got.Recent[0]["id"] != "u2" ||
			got.Recent[3]["kind"] != "entry" || got.Recent[0]["session_id"] != "old" {
			b, _ := json.Marshal(got.Recent)
			t.Fatalf("recent: %s", b)
		}
	})
}
