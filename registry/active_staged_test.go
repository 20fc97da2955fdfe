package registry_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/registry"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
)

// The recent items of a reused active session are its committed
// messages: those a staged append holds (messages_stage_open.lua, after the
// record's msg_seq) are no message yet, and may never be.
func TestActiveSessionRecentLeavesStagedMessagesOut(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := sidecartest.Start(t, srv, nil, sessions.Factory, usage.Factory, registry.Factory, messages.Factory)
		s := activeSession(t, h, "alice", `{}`, 201).SessionID
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/"+s+"/messages", `{"id":"first","role":"user","content":"hi"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		// a staged append of one message, its commit to come, as
		// messages_stage_open.lua leaves it between its put and its commit: the
		// stage in the record, the message after msg_seq
		c, l := srv.Client(t), srv.Layout()
		record := l.Session("alice", s).Record
		k := messages.SessionKeys(l, "alice", s)
		seq, err := c.Do(t.Context(), c.B().Hget().Key(record).Field("msg_seq").Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		stage := strings.Join([]string{"w", "99999999999999", strconv.FormatInt(seq, 10), "1", "first", "s0", "1", "1", "1", "a", ""}, "\t")
		body := `{"id":"s0","role":"user","content":"staged","parent_id":"first","created_at":"2026-01-01T00:00:00.000000Z"}`
		for _, cmd := range []rueidis.Completed{
			c.B().Hset().Key(k.Messages).FieldValue().FieldValue("s0", body).Build(),
			c.B().Zadd().Key(k.Order).ScoreMember().ScoreMember(float64(seq+1), "s0").Build(),
			c.B().Hset().Key(record).FieldValue().FieldValue("msg_stage", stage).Build(),
		} {
			if err := c.Do(t.Context(), cmd).Error(); err != nil {
				t.Fatal(err)
			}
		}
		got := activeSession(t, h, "alice", `{}`, 200)
		if got.SessionID != s {
			t.Fatalf("reused %s, want %s", got.SessionID, s)
		}
		var ids []any
		for _, it := range got.Recent {
			if it["kind"] == "message" {
				ids = append(ids, it["id"])
			}
		}
		if len(ids) != 1 || ids[0] != "first" {
			t.Errorf("the recent messages while a staged append is open: %v, want [first]", ids)
		}
	})
}
