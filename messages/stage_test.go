package messages_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// chatBatch is an append of n user messages with ids prefix0..prefix<n-1>.
func chatBatch(prefix string, n int) string {
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"%s%d","role":"user","content":"message %d of a long turn"}`, prefix, i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// pollTotals reads the path's total until stop closes, and returns every
// total it saw.
func pollTotals(t *testing.T, h *sidecartest.Host, session string, stop <-chan struct{}) <-chan map[int64]bool {
	out := make(chan map[int64]bool, 1)
	go func() {
		seen := map[int64]bool{}
		cl := sidecartest.NewClient(t, h.API)
		for {
			select {
			case <-stop:
				out <- seen
				return
			default:
			}
			rep := cl.Send(t.Context(), "GET", "/v1/users/alice/sessions/"+session+"/messages?limit=1", "") // the first message: small
			var p page
			if rep.Status == 200 && json.Unmarshal([]byte(rep.Body), &p) == nil {
				seen[p.Total] = true
			}
		}
	}()
	return out
}

// A turn of 1 000 messages, and one of 8 MiB (32 items of 256 KiB), is
// written in bounded steps, while a reader polling the path sees the
// history before or after each append, never between; each append is one
// event. Redis's SLOWLOG at 5 ms: on an idle machine no step reaches it
// (BENCHMARKS.md, "The steps of a staged append"); on this shared machine
// under load single steps stretch past it, so at most a third of the
// steps may, in one of three attempts on new sessions. An append written
// as one script (as before the stages: 22 ms and more for either) has
// every one of its steps there, every time.
func TestBigAppendsInBoundedSteps(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, envconf.Env{"SESSION_EVENTS": "always"})
	c := srv.Client(t)
	// the scripts are loaded (FUNCTION LOAD, once a pod and Redis) first
	if rep := h.Do(t, "POST", "/v1/users/alice/sessions/warm/messages", `{"role":"user","content":"x"}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	for attempt := range 3 {
		session := fmt.Sprintf("big%d", attempt)
		slowlog(t, c, 5000)
		resetStats(t, c)
		stop := make(chan struct{})
		totals := pollTotals(t, h, session, stop)
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/"+session+"/messages", chatBatch("m", 1000)); rep.Status != 201 {
			t.Fatalf("1 000 messages: %s", rep)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/"+session+"/messages", toolOutputs(32, 256<<10-100)); rep.Status != 201 {
			t.Fatalf("8 MiB: %s", rep)
		}
		close(stop)
		slow := slowEntries(t, c) // before the checks' own reads
		scripts := calls(t, c, "fcall")
		for n := range <-totals {
			if n != 0 && n != 1000 && n != 1032 {
				t.Errorf("a reader saw %d messages: between an append's before and after", n)
			}
		}
		if p := pathOf(t, h, session, "limit=1000"); p.Total != 1032 || p.Messages[0].ID != "m0" || p.Messages[999].ID != "m999" {
			t.Fatalf("stored %d messages", p.Total)
		}
		evs := redisstoretest.StreamEvents(t, c, srv.Layout().SessionEvents("alice", session))
		if g := types(evs); !slices.Equal(g, []string{"message_appended", "message_appended"}) {
			t.Fatalf("events %v, want one message_appended per append", g)
		}
		if d := evs[0].Data; d["count"] != float64(1000) || d["first_id"] != "m0" || d["last_id"] != "m999" || d["parent_id"] != nil {
			t.Errorf("the 1 000-message event: %v", d)
		}
		if d := evs[1].Data; d["count"] != float64(32) || d["parent_id"] != "m999" {
			t.Errorf("the 8 MiB event: %v", d)
		}
		if v, _ := c.Do(t.Context(), c.B().Hget().Key(srv.Layout().Session("alice", session).Record).Field("msg_stage").Build()).ToString(); v != "" {
			t.Errorf("the record still holds a stage: %q", v)
		}
		// the steps: open, puts and commit of each append
		steps := 2 + 1000/messages.StageMessages + 2 + 32
		if scripts < steps {
			t.Fatalf("the appends ran %d scripts, want %d bounded steps", scripts, steps)
		}
		n := 0
		for _, e := range slow {
			if strings.Contains(e, `"FCALL" "messages_stage_`) {
				n++
			}
		}
		if 3*n <= steps {
			if n > 0 {
				t.Logf("attempt %d: %d of %d steps over 5 ms (a busy machine): %v", attempt, n, steps, slow)
			}
			return
		}
		if attempt == 2 {
			t.Errorf("every attempt logged more than a third of its %d steps over 5 ms; the last, %d: %v", steps, n, slow)
		}
		t.Logf("attempt %d logged %d of %d steps over 5 ms (a busy machine?): %v", attempt, n, steps, slow)
	}
}

// Concurrent big appends to one session (the latest leaf each) all land
// whole, in some order: every batch is one run of the path.
func TestConcurrentBigAppendsLandWhole(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const writers, n = 4, 450
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := sidecartest.NewClient(t, h.API)
				if rep := cl.Send(t.Context(), "POST", "/v1/users/alice/sessions/race/messages", chatBatch(fmt.Sprintf("w%d-", w), n)); rep.Status != 201 {
					t.Errorf("writer %d: %s", w, rep)
				}
			}()
		}
		wg.Wait()
		var ids []string
		q := "limit=1000"
		for {
			p := pathOf(t, h, "race", q)
			for _, m := range p.Messages {
				ids = append(ids, m.ID)
			}
			if p.NextCursor == nil || *p.NextCursor == "" {
				break
			}
			q = "limit=1000&after=" + *p.NextCursor
		}
		if len(ids) != writers*n {
			t.Fatalf("the path holds %d messages, want %d", len(ids), writers*n)
		}
		for i := 0; i < len(ids); i += n {
			w := strings.SplitN(ids[i], "-", 2)[0]
			for j := range n {
				if want := fmt.Sprintf("%s-%d", w, j); ids[i+j] != want {
					t.Fatalf("message %d of the path is %s, want %s: batches interleaved", i+j, ids[i+j], want)
				}
			}
		}
	})
}

// A staged append repeated with its Idempotency-Key answers 200 with what
// it stored (within SIDECAR_MAX_ANSWER_BYTES) and writes nothing; with
// the same ids and no key, 200 as well; one id changed, 409 id_conflict.
func TestStagedAppendRepeats(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		const url = "/v1/users/alice/sessions/rep/messages"
		body := chatBatch("r", 500)
		if rep := h.Do(t, "POST", url, body, "Idempotency-Key", "k1"); rep.Status != 201 {
			t.Fatal(rep)
		}
		rep := h.Do(t, "POST", url, body, "Idempotency-Key", "k1")
		var got struct{ Messages []msg }
		if rep.Status != 200 || json.Unmarshal([]byte(rep.Body), &got) != nil || len(got.Messages) != 500 || got.Messages[499].ID != "r499" {
			t.Fatalf("the repeat by key: %.300s", rep)
		}
		if rep := h.Do(t, "POST", url, body); rep.Status != 200 {
			t.Fatalf("the repeat by ids: %.300s", rep)
		}
		if rep := h.Do(t, "POST", url, strings.Replace(body, "message 499 of", "message 499 for", 1)); rep.Status != 409 || rep.Code() != "id_conflict" {
			t.Fatalf("the last id with other fields: %.300s", rep)
		}
		if rep := h.Do(t, "POST", url, strings.Replace(body, "message 250 of", "message 250 for", 1)); rep.Status != 409 || rep.Code() != "id_conflict" || !strings.Contains(rep.Body, "r250") {
			t.Fatalf("a middle id with other fields: %.300s", rep)
		}
		if p := pathOf(t, h, "rep", "limit=1"); p.Total != 500 {
			t.Fatalf("the session holds %d messages, want 500", p.Total)
		}
	})
}

const partsPath = "/v1/users/alice/sessions/parts/messages/transactions"

// part is an append_items part of operation op: n messages prefix0.. .
func part(op string, i int, more bool, prefix string, n int) string {
	msgs := strings.TrimSuffix(strings.TrimPrefix(chatBatch(prefix, n), `{"messages":[`), `]}`)
	return fmt.Sprintf(`{"operation_id":%q,"type":"append_items","part":%d,"more":%t,"messages":[%s]}`, op, i, more, msgs)
}

// An operation sent in parts is staged until its last part, then visible
// at once, one event; a part repeated answers as before, a part out of
// order is 409 part_missing; after the commit any part is a repeat.
func TestAppendItemsInParts(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_EVENTS": "always"})
		do := func(body string, status int, code string) sidecartest.Reply {
			t.Helper()
			rep := h.Do(t, "POST", partsPath, body)
			if rep.Status != status || (code != "" && rep.Code() != code) {
				t.Fatalf("%.120s: %.300s, want %d %s", body, rep, status, code)
			}
			return rep
		}
		if rep := do(part("op", 0, true, "a", 100), 202, ""); !strings.Contains(rep.Body, `"staged":100`) {
			t.Fatalf("part 0: %s", rep)
		}
		do(part("op", 0, true, "a", 100), 202, "") // a repeat
		do(part("op", 2, false, "c", 5), 409, "part_missing")
		if p := pathOf(t, h, "parts", "limit=1"); p.Total != 0 {
			t.Fatalf("staged messages are visible: %d", p.Total)
		}
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/parts/messages/a3", ""); rep.Status != 404 {
			t.Errorf("a staged message by id: %s, want 404", rep)
		}
		do(part("op", 1, true, "b", 100), 202, "")
		rep := do(part("op", 2, false, "c", 5), 201, "")
		var a txAnswer
		rep.JSON(t, &a)
		if !a.Applied || len(a.Messages) != 5 || a.Messages[0].ID != "c0" {
			t.Fatalf("the last part's answer: %.300s", rep)
		}
		if p := pathOf(t, h, "parts", "limit=1"); p.Total != 205 || p.Messages[0].ID != "a0" {
			t.Fatalf("after the commit: %d messages", p.Total)
		}
		do(part("op", 1, true, "b", 100), 200, "")
		do(part("op", 2, false, "c", 5), 200, "")
		do(`{"operation_id":"op","type":"append_items","messages":[{"role":"user","content":"x"}]}`, 409, "operation_conflict")
		evs := redisstoretest.StreamEvents(t, srv.Client(t), srv.Layout().SessionEvents("alice", "parts"))
		if len(evs) != 1 || evs[0].Data["count"] != float64(205) || evs[0].Data["last_id"] != "c4" {
			t.Fatalf("events: %+v, want one message_appended of 205", evs)
		}
		do(`{"operation_id":"x","type":"replace_history","part":0,"messages":[]}`, 400, "")
		do(`{"operation_id":"x","type":"append_items","more":true,"messages":[{"role":"user","content":"x"}]}`, 400, "")
		do(part("big", 0, true, "z", 101), 400, "")
	})
}

// A stage whose writer stopped (its lease run out) is dropped by the next
// write, which then lands; its messages were never visible, and ended with
// the session's keys meanwhile.
func TestAbandonedStageIsDropped(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		l := srv.Layout()
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/parts/messages", `{"id":"first","role":"user","content":"hi"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		if rep := h.Do(t, "POST", partsPath, part("dead", 0, true, "d", 100)); rep.Status != 202 {
			t.Fatal(rep)
		}
		keys := messagesKeys(l, "alice", "parts")
		for _, k := range keys {
			if ttl, err := c.Do(t.Context(), c.B().Pttl().Key(k).Build()).AsInt64(); err != nil || ttl <= 0 {
				t.Errorf("%s: PTTL %d while staged, want a TTL", k, ttl)
			}
		}
		// readers do not see the staged messages
		for _, url := range []string{"/messages/d0", "/messages/d99", "/messages?leaf=d5"} {
			if rep := h.Do(t, "GET", "/v1/users/alice/sessions/parts"+url, ""); rep.Status != 404 {
				t.Errorf("GET %s: %s, want 404", url, rep)
			}
		}
		if rep := h.Do(t, "GET", "/v1/users/alice/sessions/parts/messages/first/children", ""); rep.Status != 200 || strings.Contains(rep.Body, "d0") {
			t.Errorf("children of the stage's parent: %s, want none staged", rep)
		}
		// the writer died: its lease runs out
		record := l.Session("alice", "parts").Record
		st, _ := c.Do(t.Context(), c.B().Hget().Key(record).Field("msg_stage").Build()).ToString()
		f := strings.Split(st, "\t")
		if len(f) < 10 {
			t.Fatalf("msg_stage %q", st)
		}
		f[1] = "1"
		if err := c.Do(t.Context(), c.B().Hset().Key(record).FieldValue().FieldValue("msg_stage", strings.Join(f, "\t")).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/parts/messages", `{"id":"next","role":"assistant","content":"hello"}`); rep.Status != 201 || !strings.Contains(rep.Body, `"parent_id":"first"`) {
			t.Fatalf("the next append: %s", rep)
		}
		if n, _ := c.Do(t.Context(), c.B().Hlen().Key(keys[0]).Build()).AsInt64(); n != 2 {
			t.Errorf("the messages hash holds %d messages after the drop, want 2", n)
		}
		if n, _ := c.Do(t.Context(), c.B().Zcard().Key(keys[3]).Build()).AsInt64(); n != 2 {
			t.Errorf("the order holds %d messages after the drop, want 2", n)
		}
		if rep := h.Do(t, "POST", partsPath, part("dead", 1, false, "e", 5)); rep.Status != 409 || rep.Code() != "part_missing" ||
			!strings.Contains(rep.Body, "are gone") {
			t.Errorf("the dead operation's next part: %s, want 409 part_missing, its parts gone", rep)
		}
		// and it took no stage: the next write does not wait
		if v, _ := c.Do(t.Context(), c.B().Hget().Key(record).Field("msg_stage").Build()).ToString(); v != "" {
			t.Errorf("a part of a dead operation left a stage: %q", v)
		}
		// a later part of a deleted session's operation creates nothing
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/gone/messages/transactions", part("g", 3, true, "g", 2)); rep.Status != 409 || rep.Code() != "part_missing" {
			t.Errorf("a later part of an unknown operation: %s, want 409 part_missing", rep)
		}
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(l.Session("alice", "gone").Record).Build()).AsInt64(); n != 0 {
			t.Errorf("a later part of an unknown operation made a record")
		}
	})
}

// While a stage lives, another write of the session's messages waits for
// its commit (its script refused and tried again, seen in Redis's
// commandstats), then lands after it.
func TestWriteWaitsForAStage(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	c := srv.Client(t)
	if rep := h.Do(t, "POST", partsPath, part("slow", 0, true, "s", 10)); rep.Status != 202 {
		t.Fatal(rep)
	}
	before := calls(t, c, "fcall")
	var landed atomic.Bool
	done := make(chan sidecartest.Reply)
	go func() {
		rep := sidecartest.NewClient(t, h.API).Send(t.Context(), "POST", "/v1/users/alice/sessions/parts/messages", `{"id":"after","role":"user","content":"x"}`)
		landed.Store(true)
		done <- rep
	}()
	// the write has been refused twice: it waits
	for deadline := time.Now().Add(5 * time.Second); calls(t, c, "fcall") < before+2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the write never met the stage")
		}
	}
	if landed.Load() {
		t.Fatal("a write landed while a stage lived")
	}
	if rep := h.Do(t, "POST", partsPath, part("slow", 1, false, "t", 10)); rep.Status != 201 {
		t.Fatal(rep)
	}
	if rep := <-done; rep.Status != 201 || !strings.Contains(rep.Body, `"parent_id":"t9"`) {
		t.Fatalf("the waiting write: %s, want 201 under the stage's last message", rep)
	}
}

// messagesKeys are the session's messages, tree, children and order keys.
func messagesKeys(l redisstore.Layout, user, session string) []string {
	k := messages.SessionKeys(l, user, session)
	return []string{k.Messages, k.Tree, k.Children, k.Order}
}

// historyTx is a replace_history of n messages prefix0.. (expected_leaf
// when leaf is not nil).
func historyTx(op, prefix string, n int, leaf *string) string {
	msgs := strings.TrimSuffix(strings.TrimPrefix(chatBatch(prefix, n), `{"messages":[`), `]}`)
	exp := ""
	if leaf != nil {
		exp = fmt.Sprintf(`,"expected_leaf":%q`, *leaf)
	}
	return fmt.Sprintf(`{"operation_id":%q,"type":"replace_history"%s,"messages":[%s]}`, op, exp, msgs)
}

// A replace_history past one bounded step is staged in keys of its own
// and renamed over the session's at its commit: readers see the old
// history or the new, the new may reuse the old ids, the ring of keys
// stays, compactions and the old messages go, nothing staged is left; a
// stale expected_leaf is 409 suffix_mismatch with nothing written.
func TestBigReplaceHistoryStaged(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_EVENTS": "always"})
		c, l := srv.Client(t), srv.Layout()
		const url = "/v1/users/alice/sessions/hist/messages"
		if rep := h.Do(t, "POST", url, chatBatch("m", 50), "Idempotency-Key", "k-old"); rep.Status != 201 {
			t.Fatal(rep)
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/hist/compactions", `{"summary":"s","from_id":"m0","to_id":"m9"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		stale := "m3"
		if rep := h.Do(t, "POST", url+"/transactions", historyTx("h0", "m", 300, &stale)); rep.Status != 409 || rep.Code() != "suffix_mismatch" {
			t.Fatalf("a stale expected_leaf: %s", rep)
		}
		stop := make(chan struct{})
		totals := pollTotals(t, h, "hist", stop)
		leaf := "m49"
		// the new history reuses m0..m299: m0..m49 are old ids
		rep := h.Do(t, "POST", url+"/transactions", historyTx("h1", "m", 300, &leaf))
		close(stop)
		if rep.Status != 201 {
			t.Fatalf("replace_history of 300: %.300s", rep)
		}
		for n := range <-totals {
			if n != 41 && n != 300 { // 41: the old 50 as read, m0..m9 one compaction
				t.Errorf("a reader saw %d messages: neither the old history nor the new", n)
			}
		}
		p := pathOf(t, h, "hist", "limit=1000&compacted=false")
		if p.Total != 300 || p.Messages[0].ID != "m0" || p.Messages[299].ID != "m299" || p.Messages[0].ParentID != nil {
			t.Fatalf("the new history: %d messages", p.Total)
		}
		k := messages.SessionKeys(l, "alice", "hist")
		if n, _ := c.Do(t.Context(), c.B().Hlen().Key(k.Messages).Build()).AsInt64(); n != 300 {
			t.Errorf("the messages hash holds %d, want 300", n)
		}
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(k.Compactions).Build()).AsInt64(); n != 0 {
			t.Errorf("the compactions are left")
		}
		sk := messages.StagedKeys(l, "alice", "hist")
		if n, _ := c.Do(t.Context(), c.B().Exists().Key(sk.Messages, sk.Tree, sk.Children, sk.Order).Build()).AsInt64(); n != 0 {
			t.Errorf("%d staged keys are left", n)
		}
		for _, key := range []string{k.Messages, k.Tree, k.Children, k.Order} {
			if ttl, _ := c.Do(t.Context(), c.B().Pttl().Key(key).Build()).AsInt64(); ttl <= 0 {
				t.Errorf("%s: PTTL %d, want the session's TTL", key, ttl)
			}
		}
		// the ring kept the old key (an append of the same messages
		// answers 200 without it: its ids are held with the same fields)
		if v, _ := c.Do(t.Context(), c.B().Hget().Key(k.Tree).Field(" kk-old").Build()).ToString(); !strings.HasPrefix(v, "m0 ") {
			t.Errorf("the ring's entry of the old key after the commit: %q, want its ids", v)
		}
		// the repeat answers what it stored; the ring kept the old key,
		// whose messages are gone: it appends again
		if rep := h.Do(t, "POST", url+"/transactions", historyTx("h1", "m", 300, &leaf)); rep.Status != 200 || !strings.Contains(rep.Body, `"m299"`) {
			t.Fatalf("the repeat: %.300s", rep)
		}
		if rep := h.Do(t, "POST", url, chatBatch("m", 50), "Idempotency-Key", "k-old"); rep.Status != 200 {
			t.Errorf("the old key again: %.200s, want 200: its messages (m0..m49) are held with the same fields", rep)
		}
		evs := redisstoretest.StreamEvents(t, c, l.SessionEvents("alice", "hist"))
		if g := types(evs); !slices.Equal(g[len(g)-2:], []string{"message_deleted", "message_appended"}) {
			t.Fatalf("events %v, want the clear and one message_appended last", g)
		}
		if d := evs[len(evs)-2].Data; d["cleared"] != true || d["count"] != float64(50) || d["operation_id"] != "h1" {
			t.Errorf("the clear: %v", d)
		}
		if d := evs[len(evs)-1].Data; d["count"] != float64(300) || d["first_id"] != "m0" || d["last_id"] != "m299" {
			t.Errorf("the new history's event: %v", d)
		}
	})
}
