package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

func findIDs(t *testing.T, srv *redisstoretest.Server, q string) string {
	t.Helper()
	res, err := search.Find(t.Context(), srv.Client(t), srv.Layout(), "u", "", q, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range res {
		ids = append(ids, r.SessionID+"/"+r.ID)
	}
	return strings.Join(ids, ",")
}

func qaEntry(t *testing.T, id, q string) []byte {
	t.Helper()
	e, err := cognee.NewQAEntry(cognee.QAFields{Question: json.RawMessage(strconv.Quote(q)), Answer: json.RawMessage(`"ok"`)}, id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func cogneeRaw(id, question string) string {
	return fmt.Sprintf(`{"time": "2026-11-24T10:00:00.000000", "question": %q, "context": "", "answer": "ok", "qa_id": %q, "feedback_text": null, "feedback_score": null, "used_graph_element_ids": null, "memify_metadata": null, "used_session_context_ids": null}`, question, id)
}

// A PATCH (and its re-index) between a catch-up's read and its write: the
// write finds the entry's bytes changed and stores nothing, so the index
// holds the new text, never the one read before the PATCH.
func TestCatchupRacingAPatchStoresNothing(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		ctx := context.Background()
		if _, _, err := s.Append(ctx, "u", "s", "s1", qaEntry(t, "s1", "alpha"), true); err != nil {
			t.Fatal(err)
		}
		c := srv.Client(t)
		key := srv.Layout().Session("u", "s").Entries
		if err := c.Do(ctx, c.B().Rpush().Key(key).Element(cogneeRaw("c1", "zebra")).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		args, err := s.catchupRead(ctx, "u", "s")
		if err != nil || args == nil {
			t.Fatalf("read: %v %v", args, err)
		}
		upd, err := s.UpdateEntry(ctx, "u", "s", "c1", [][2]string{{"question", `"giraffe"`}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReindexEntry(ctx, "u", "s", "c1", upd); err != nil {
			t.Fatal(err)
		}
		stored, _, err := s.catchupWrite(ctx, "u", "s", args)
		if err != nil || stored {
			t.Fatalf("write after the PATCH: stored %v, %v; want nothing stored", stored, err)
		}
		if z, g := findIDs(t, srv, "zebra"), findIDs(t, srv, "giraffe"); z != "" || g != "s/c1" {
			t.Fatalf("zebra %q, giraffe %q: want the PATCH's text only", z, g)
		}
	})
}

// A text PATCH whose re-index never ran (the request died) is redone by the
// next catch-up: the PATCH moved the covered prefix before the entry.
func TestLostReindexIsRedone(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		ctx := context.Background()
		for i, q := range []string{"alpha", "beta", "gamma"} {
			if _, _, err := s.Append(ctx, "u", "s", "s"+strconv.Itoa(i), qaEntry(t, "s"+strconv.Itoa(i), q), true); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.UpdateEntry(ctx, "u", "s", "s1", [][2]string{{"answer", `"zebra"`}}, nil); err != nil {
			t.Fatal(err)
		}
		if got := findIDs(t, srv, "beta"); got != "" {
			t.Fatalf("beta before the catch-up: %q, want it out (its re-index did not run)", got)
		}
		if left, err := s.CatchUp(ctx, "u", "s", 1); err != nil || left {
			t.Fatalf("catch-up: left %v, %v", left, err)
		}
		if b, z, g := findIDs(t, srv, "beta"), findIDs(t, srv, "zebra"), findIDs(t, srv, "gamma"); b != "s/s1" || z != "s/s1" || g != "s/s2" {
			t.Fatalf("after the catch-up: beta %q, zebra %q, gamma %q", b, z, g)
		}
	})
}
