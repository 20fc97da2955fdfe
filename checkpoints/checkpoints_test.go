package checkpoints_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/checkpoints"
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/ttl"
	"github.com/agentsidecar/agentsidecar/usage"
)

const base = "/v1/users/u1/sessions/t1/checkpoints"

func start(t testing.TB, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	return sidecartest.Start(t, srv, env, sessions.Factory, usage.Factory, ttl.Factory, checkpoints.Factory)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// put stores checkpoint id of ns with parent (or none), metadata and the
// channel values given as channel → "version=value".
func put(t testing.TB, h *sidecartest.Host, path, ns, id, parent, metadata string, values map[string]string) sidecartest.Reply {
	t.Helper()
	body := map[string]any{
		"checkpoint_ns": ns, "checkpoint_id": id,
		"checkpoint": map[string]string{"type": "json", "data": b64(`{"id":"` + id + `"}`)},
		"metadata":   json.RawMessage(metadata),
	}
	if parent != "" {
		body["parent_checkpoint_id"] = parent
	}
	versions := map[string]string{}
	vals := []map[string]string{}
	for ch, vv := range values {
		ver, val, _ := strings.Cut(vv, "=")
		versions[ch] = ver
		if val != "" {
			vals = append(vals, map[string]string{"channel": ch, "version": ver, "type": "json", "data": b64(val)})
		}
	}
	body["channel_versions"] = versions
	body["channel_values"] = vals
	raw, _ := json.Marshal(body)
	return h.Do(t, "POST", path, string(raw))
}

func writes(t testing.TB, h *sidecartest.Host, ns, id, task, path string, ws ...string) sidecartest.Reply {
	t.Helper()
	list := []map[string]any{}
	for _, w := range ws { // "idx:channel:value"
		parts := strings.SplitN(w, ":", 3)
		var idx int
		fmt.Sscan(parts[0], &idx)
		list = append(list, map[string]any{"idx": idx, "channel": parts[1], "type": "json", "data": b64(parts[2])})
	}
	raw, _ := json.Marshal(map[string]any{"checkpoint_ns": ns, "checkpoint_id": id, "task_id": task, "task_path": path, "writes": list})
	return h.Do(t, "POST", base+"/writes", string(raw))
}

type tuple struct {
	CheckpointNS       string          `json:"checkpoint_ns"`
	CheckpointID       string          `json:"checkpoint_id"`
	ParentCheckpointID *string         `json:"parent_checkpoint_id"`
	Metadata           json.RawMessage `json:"metadata"`
	ChannelValues      []struct {
		Channel, Version, Type, Data string
	} `json:"channel_values"`
	PendingWrites []struct {
		TaskID   string `json:"task_id"`
		TaskPath string `json:"task_path"`
		Idx      int
		Channel  string
		Data     string
	} `json:"pending_writes"`
}

func (tp tuple) values() string {
	var out []string
	for _, v := range tp.ChannelValues {
		d, _ := base64.StdEncoding.DecodeString(v.Data)
		out = append(out, v.Channel+"@"+v.Version+"="+string(d))
	}
	return strings.Join(sorted(out), ",")
}

func (tp tuple) writes() string {
	var out []string
	for _, w := range tp.PendingWrites {
		d, _ := base64.StdEncoding.DecodeString(w.Data)
		out = append(out, fmt.Sprintf("%s/%s/%d/%s=%s", w.TaskPath, w.TaskID, w.Idx, w.Channel, d))
	}
	return strings.Join(out, ",")
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func get(t *testing.T, h *sidecartest.Host, ns, id string) (tuple, sidecartest.Reply) {
	t.Helper()
	q := url.Values{"checkpoint_ns": {ns}}
	if id != "" {
		q.Set("checkpoint_id", id)
	}
	rep := h.Do(t, "GET", base+"/tuple?"+q.Encode(), "")
	var tp tuple
	if rep.Status == 200 {
		rep.JSON(t, &tp)
	}
	return tp, rep
}

func ids(t *testing.T, h *sidecartest.Host, query string) (string, *string) {
	t.Helper()
	rep := h.Do(t, "GET", base+"?"+query, "")
	if rep.Status != 200 {
		t.Fatalf("list %s: %d %s", query, rep.Status, rep.Body)
	}
	var out struct {
		Checkpoints []tuple `json:"checkpoints"`
		NextBefore  *string `json:"next_before"`
	}
	rep.JSON(t, &out)
	var s []string
	for _, c := range out.Checkpoints {
		s = append(s, c.CheckpointNS+"/"+c.CheckpointID)
	}
	return strings.Join(s, ","), out.NextBefore
}

func want(t *testing.T, rep sidecartest.Reply, status int) {
	t.Helper()
	if rep.Status != status {
		t.Fatalf("got %d %s, want %d", rep.Status, rep.Body, status)
	}
}

func TestCheckpoints(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "600"})
		// no checkpoint yet
		if _, rep := get(t, h, "", ""); rep.Status != 404 {
			t.Fatalf("empty thread: %d %s", rep.Status, rep.Body)
		}
		want(t, put(t, h, base, "", "c1", "", `{"source":"input","step":-1}`, map[string]string{"a": "1=[1]", "b": "1=\"x\""}), 200)
		want(t, put(t, h, base, "", "c2", "c1", `{"source":"loop","step":0}`, map[string]string{"a": "2=[1,2]", "b": "1"}), 200)
		want(t, put(t, h, base, "child", "c3", "", `{"source":"loop","step":0}`, nil), 200)
		// the newest of the root namespace carries b over from c1
		tp, rep := get(t, h, "", "")
		want(t, rep, 200)
		if tp.CheckpointID != "c2" || tp.ParentCheckpointID == nil || *tp.ParentCheckpointID != "c1" || tp.values() != `a@2=[1,2],b@1="x"` {
			t.Fatalf("latest: %s", rep.Body)
		}
		tp, _ = get(t, h, "", "c1")
		if tp.values() != `a@1=[1],b@1="x"` || tp.ParentCheckpointID != nil {
			t.Fatalf("c1: %+v", tp)
		}
		if tp, _ := get(t, h, "child", ""); tp.CheckpointID != "c3" {
			t.Fatalf("child latest: %+v", tp)
		}
		// writes: LangGraph's order and upsert rules
		want(t, writes(t, h, "", "c2", "tb", "", "0:x:1", "1:y:2"), 200)
		want(t, writes(t, h, "", "c2", "ta", "", "0:x:3", "-1:__error__:\"e1\""), 200)
		rep = writes(t, h, "", "c2", "ta", "", "0:x:9", "-1:__error__:\"e2\"")
		if rep.Status != 200 || !strings.Contains(rep.Body, `"stored":1`) {
			t.Fatalf("retried writes: %d %s", rep.Status, rep.Body)
		}
		tp, _ = get(t, h, "", "c2")
		if got := tp.writes(); got != `/ta/-1/__error__="e2",/ta/0/x=3,/tb/0/x=1,/tb/1/y=2` {
			t.Fatalf("writes: %s", got)
		}
		// a write may come before its checkpoint (LangGraph puts both at once)
		want(t, writes(t, h, "", "c9", "ta", "", "0:x:1"), 200)
		want(t, put(t, h, base, "", "c9", "c2", `{}`, nil), 200)
		if tp, _ := get(t, h, "", "c9"); tp.writes() != "/ta/0/x=1" {
			t.Fatalf("early write: %s", tp.writes())
		}
		// list: newest first, by namespace or all, before, limit, filter
		if got, next := ids(t, h, ""); got != "/c9,child/c3,/c2,/c1" || next != nil {
			t.Fatalf("list all: %s %v", got, next)
		}
		if got, _ := ids(t, h, "checkpoint_ns="); got != "/c9,/c2,/c1" {
			t.Fatalf("list root: %s", got)
		}
		if got, next := ids(t, h, "limit=1"); got != "/c9" || next == nil || *next != "c9" {
			t.Fatalf("list limit: %s %v", got, next)
		}
		if got, _ := ids(t, h, "before=c3"); got != "/c2,/c1" {
			t.Fatalf("list before: %s", got)
		}
		if got, _ := ids(t, h, "filter="+url.QueryEscape(`{"source":"loop"}`)); got != "child/c3,/c2" {
			t.Fatalf("list filter: %s", got)
		}
		if got, _ := ids(t, h, "filter="+url.QueryEscape(`{"step":0,"source":"loop"}`)+"&checkpoint_ns=child"); got != "child/c3" {
			t.Fatalf("list filter ns: %s", got)
		}
		// the thread is a session: a record, the session TTL on every key
		rep = h.Do(t, "GET", "/v1/users/u1/sessions/t1", "")
		want(t, rep, 200)
		for _, k := range srv.Keys(t, "agent_checkpoint*") {
			c := srv.Client(t)
			if ttl, _ := c.Do(t.Context(), c.B().Ttl().Key(k).Build()).AsInt64(); ttl <= 0 || ttl > 600 {
				t.Fatalf("%s: TTL %d", k, ttl)
			}
		}
		// deleted with the session
		want(t, h.Do(t, "DELETE", "/v1/users/u1/sessions/t1", ""), 204)
		if ks := srv.Keys(t, "agent_checkpoint*"); len(ks) != 0 {
			t.Fatalf("left after delete: %v", ks)
		}
		if _, rep := get(t, h, "", ""); rep.Status != 404 {
			t.Fatalf("after delete: %d", rep.Status)
		}
	})
}

func TestRefusals(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"CHECKPOINTS_MAX_PER_THREAD": "2"})
		for _, body := range []string{
			`{}`,
			`{"checkpoint_id":"c1","checkpoint":{"type":"json","data":"!!"}}`,
			`{"checkpoint_id":"c\u0000","checkpoint":{"type":"json","data":""}}`,
			`{"checkpoint_id":"c1","checkpoint":{"type":"json","data":""},"metadata":[1]}`,
			`{"checkpoint_id":"c1","checkpoint":{"type":"json","data":""},"Metadata":{}}`,
		} {
			rep := h.Do(t, "POST", base, body)
			if rep.Status != 400 {
				t.Fatalf("%s: %d %s", body, rep.Status, rep.Body)
			}
		}
		if n := srv.DBSize(t); n != 0 {
			t.Fatalf("refused puts wrote %d keys", n)
		}
		want(t, put(t, h, base, "", "c1", "", `{}`, nil), 200)
		want(t, put(t, h, base, "x", "c2", "", `{}`, nil), 200)
		want(t, put(t, h, base, "x", "c2", "", `{"again":true}`, nil), 200) // a replace is no new checkpoint
		rep := put(t, h, base, "", "c3", "", `{}`, nil)
		if rep.Status != 409 || rep.Code() != "checkpoints_full" {
			t.Fatalf("past the cap: %d %s", rep.Status, rep.Body)
		}
		for _, q := range []string{"limit=0", "limit=101", "filter=[1]", "filter=x", "other=1"} {
			if rep := h.Do(t, "GET", base+"?"+q, ""); rep.Status != 400 {
				t.Fatalf("%s: %d %s", q, rep.Status, rep.Body)
			}
		}
		// before is the list's cursor (next_before): a bad one is the
		// API's one bad-cursor code.
		for q, code := range map[string]string{
			"before=" + strings.Repeat("c", 257): "invalid_cursor", "before=c%00": "invalid_cursor",
			"checkpoint_ns=" + strings.Repeat("n", 1025): "invalid_query",
		} {
			if rep := h.Do(t, "GET", base+"?"+q, ""); rep.Status != 400 || rep.Code() != code {
				t.Errorf("%.20s...: %s, want 400 %s", q, rep, code)
			}
		}
	})
}

// TestConcurrentWrites: 8 tasks write against one checkpoint at once, each
// twice (a retry); every first write is kept once, in order.
func TestConcurrentWrites(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		want(t, put(t, h, base, "", "c1", "", `{}`, nil), 200)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				task := fmt.Sprintf("t%d", i)
				for try := range 2 {
					c := sidecartest.NewClient(t, h.API)
					list := []map[string]any{}
					for k := range 3 {
						list = append(list, map[string]any{"idx": k, "channel": "ch", "type": "json", "data": b64(fmt.Sprint(try))})
					}
					raw, _ := json.Marshal(map[string]any{"checkpoint_id": "c1", "task_id": task, "writes": list})
					if rep := c.Send(t.Context(), "POST", base+"/writes", string(raw)); rep.Status != 200 {
						t.Errorf("%s: %d %s", task, rep.Status, rep.Body)
					}
				}
			}()
		}
		wg.Wait()
		tp, _ := get(t, h, "", "c1")
		if len(tp.PendingWrites) != 24 {
			t.Fatalf("got %d writes, want 24", len(tp.PendingWrites))
		}
		for i, w := range tp.PendingWrites {
			d, _ := base64.StdEncoding.DecodeString(w.Data)
			if w.TaskID != fmt.Sprintf("t%d", i/3) || w.Idx != i%3 || string(d) != "0" {
				t.Fatalf("write %d: %+v %s", i, w, d)
			}
		}
	})
}

// TestAnswerCap: a read past the cap is 409 checkpoint_too_large; a list
// page ends before the checkpoint that would pass it and next_before
// continues there.
func TestAnswerCap(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{
			"SIDECAR_MAX_ANSWER_BYTES": "4096", "SIDECAR_MAX_MESSAGE_BODY_BYTES": "65536", "SESSION_MAX_ITEM_BYTES": "60000",
		})
		big := `"` + strings.Repeat("x", 30000) + `"` // 40 KB in base64
		want(t, put(t, h, base, "", "c1", "", `{}`, map[string]string{"a": "1=" + big}), 200)
		want(t, put(t, h, base, "", "c2", "c1", `{}`, map[string]string{"b": "1=" + big}), 200)
		if _, rep := get(t, h, "", "c2"); rep.Status != 200 {
			t.Fatalf("c2 alone: %d %s", rep.Status, rep.Body)
		}
		got, next := ids(t, h, "limit=2")
		if got != "/c2" || next == nil || *next != "c2" {
			t.Fatalf("first page: %s %v", got, next)
		}
		if got, next := ids(t, h, "limit=2&before=c2"); got != "/c1" || next != nil {
			t.Fatalf("second page: %s %v", got, next)
		}
		// c3 carries both values over: 80 KB, past the 64 KiB cap
		want(t, put(t, h, base, "", "c3", "c2", `{}`, map[string]string{"a": "1", "b": "1"}), 200)
		_, rep := get(t, h, "", "c3")
		if rep.Status != 409 || rep.Code() != "checkpoint_too_large" {
			t.Fatalf("c3: %d %s", rep.Status, rep.Body)
		}
		if rep := h.Do(t, "GET", base, ""); rep.Status != 409 || rep.Code() != "checkpoint_too_large" {
			t.Fatalf("a list whose first checkpoint is too large: %d %s", rep.Status, rep.Body)
		}
	})
}

// TestWrongType: a key of the thread holding another type refuses the
// write (409 key_wrong_type) and nothing is written.
func TestWrongType(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		c := srv.Client(t)
		key := srv.Layout().SessionKey(checkpoints.OrderFamily, "u1", "t1")
		if err := c.Do(t.Context(), c.B().Set().Key(key).Value("x").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		before := srv.Keys(t, "*")
		for _, rep := range []sidecartest.Reply{
			put(t, h, base, "", "c1", "", `{}`, map[string]string{"a": "1=1"}),
			writes(t, h, "", "c1", "ta", "", "0:x:1"),
		} {
			if rep.Status != 409 || rep.Code() != "key_wrong_type" {
				t.Fatalf("%d %s", rep.Status, rep.Body)
			}
		}
		if after := srv.Keys(t, "*"); strings.Join(sorted(after), ",") != strings.Join(sorted(before), ",") {
			t.Fatalf("keys %v became %v", before, after)
		}
		if _, rep := get(t, h, "", ""); rep.Status != 409 || rep.Code() != "key_wrong_type" {
			t.Fatalf("read: %d %s", rep.Status, rep.Body)
		}
	})
}

// TestWritesFirstGetTTL: writes that make the thread's keys in a session
// that already exists (slid a moment ago) give them its TTL at once.
func TestWritesFirstGetTTL(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "604800"})
		want(t, h.Do(t, "POST", "/v1/users/u1/sessions/t1/entries", `{"question":"q","answer":"a"}`), 201)
		n := started(t, h)
		want(t, writes(t, h, "", "c1", "ta", "", "0:x:1"), 200)
		if got := started(t, h); got != n {
			t.Fatalf("writes to a session that exists: started %v → %v", n, got)
		}
		// writes that start a thread start its session, counted once
		raw := `{"checkpoint_id":"c1","task_id":"ta","writes":[{"idx":0,"channel":"x","type":"json","data":"MQ=="}]}`
		want(t, h.Do(t, "POST", "/v1/users/u1/sessions/t2/checkpoints/writes", raw), 200)
		want(t, h.Do(t, "POST", "/v1/users/u1/sessions/t2/checkpoints/writes", raw), 200)
		if got := started(t, h); got != n+1 {
			t.Fatalf("writes starting a thread: started %v → %v", n, got)
		}
		c := srv.Client(t)
		for _, k := range srv.Keys(t, "agent_checkpoint*") {
			if ttl, _ := c.Do(t.Context(), c.B().Ttl().Key(k).Build()).AsInt64(); ttl <= 0 || ttl > 604800 {
				t.Fatalf("%s: TTL %d", k, ttl)
			}
		}
	})
}

// started is the host's sidecar_sessions_started_total.
func started(t *testing.T, h *sidecartest.Host) float64 {
	t.Helper()
	for _, line := range strings.Split(h.Metrics(t), "\n") {
		if v, ok := strings.CutPrefix(line, "sidecar_sessions_started_total "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	t.Fatal("no sidecar_sessions_started_total")
	return 0
}

// TestListMetadataBytes: a list's page script answers each candidate's
// metadata (up to SESSION_MAX_ITEM_BYTES each, 100 a page), so it stops
// before the metadata passes its byte cap; a filtered list still reaches
// the oldest checkpoint through the shorter pages.
func TestListMetadataBytes(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{
			"SIDECAR_MAX_ANSWER_BYTES": "4096", "SIDECAR_MAX_MESSAGE_BODY_BYTES": "65536", "SESSION_MAX_ITEM_BYTES": "60000",
		})
		pad := strings.Repeat("x", 25000)
		for i := 1; i <= 5; i++ {
			md := fmt.Sprintf(`{"step":%d,"pad":%q}`, i, pad)
			want(t, put(t, h, base, "", fmt.Sprintf("c%d", i), "", md, nil), 200)
		}
		st := sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600})
		r, err := st.Run(t.Context(), checkpoints.ScriptList, "u1", "t1", "0", "", "", "100", "60000")
		if err != nil {
			t.Fatal(err)
		}
		page, err := r.Values[0].ToArray()
		if err != nil {
			t.Fatal(err)
		}
		more, _ := r.Values[1].AsInt64()
		if n := len(page) / 3; n != 2 || more != 1 {
			t.Errorf("a page of 100 under a 60 000-byte cap: %d checkpoints of about 25 000 bytes (more %d), want 2 and more", n, more)
		}
		if got, next := ids(t, h, `filter={"step":1}`); got != "/c1" || next != nil {
			t.Errorf("filtered list: %s %v, want /c1 alone", got, next)
		}
	})
}

// TestDeleteFreesOffThread: a thread's hash can hold tens of thousands of
// fields (CHECKPOINTS_MAX_PER_THREAD checkpoints, their values and
// writes); the session's delete hands it to Redis's lazy-free thread
// (UNLINK), as the erasure does, instead of freeing it inside the script.
func TestDeleteFreesOffThread(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		if srv.Mini != nil {
			t.Skip("miniredis has no lazy-free thread")
		}
		h := start(t, srv, nil)
		for i := range 4 {
			var ws []string
			for j := range 250 {
				ws = append(ws, fmt.Sprintf("%d:ch:%d", j, j))
			}
			want(t, writes(t, h, "", fmt.Sprintf("c%d", i), "task", "", ws...), 200)
		}
		c := srv.Client(t)
		lazy := func() int64 {
			info, err := c.Do(t.Context(), c.B().Info().Section("memory").Build()).ToString()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(l), "lazyfreed_objects:"); ok {
					var n int64
					fmt.Sscan(v, &n)
					return n
				}
			}
			t.Fatalf("INFO memory has no lazyfreed_objects: %q", info)
			return 0
		}
		before := lazy()
		want(t, h.Do(t, "DELETE", "/v1/users/u1/sessions/t1", ""), 204)
		for range 100 {
			if lazy() > before {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Error("the delete freed the thread's 1 000-field hash on Redis's main thread")
	})
}

// TestWritesCountAgainstThreadCap: writes to checkpoint ids never stored
// count against CHECKPOINTS_MAX_PER_THREAD, so they cannot grow a thread
// without limit; storing such an id adds none, and more writes to an id
// already counted stay welcome.
func TestWritesCountAgainstThreadCap(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"CHECKPOINTS_MAX_PER_THREAD": "3"})
		want(t, put(t, h, base, "", "c1", "", `{}`, nil), 200)
		want(t, writes(t, h, "", "c1", "t1", "", "0:a:1"), 200) // a stored checkpoint's writes add no id
		want(t, writes(t, h, "", "c2", "t1", "", "0:a:1"), 200) // before its checkpoint
		want(t, writes(t, h, "", "c2", "t2", "", "0:a:2"), 200) // the same id again
		want(t, writes(t, h, "x", "c3", "t1", "", "0:a:1"), 200)
		rep := writes(t, h, "", "c4", "t1", "", "0:a:1")
		if rep.Status != 409 || rep.Code() != "checkpoints_full" {
			t.Fatalf("writes to a 4th id: %d %s", rep.Status, rep.Body)
		}
		if tp, rep := get(t, h, "", "c4"); rep.Status != 404 || tp.CheckpointID != "" {
			t.Fatalf("refused writes stored: %d %s", rep.Status, rep.Body)
		}
		rep = put(t, h, base, "", "c4", "", `{}`, nil)
		if rep.Status != 409 || rep.Code() != "checkpoints_full" {
			t.Fatalf("put of a 4th id: %d %s", rep.Status, rep.Body)
		}
		want(t, put(t, h, base, "", "c2", "c1", `{}`, nil), 200) // its writes held its place
		want(t, put(t, h, base, "x", "c3", "", `{}`, nil), 200)
		want(t, writes(t, h, "", "c2", "t3", "", "0:a:3"), 200)
		tp, _ := get(t, h, "", "c2")
		if got := tp.writes(); got != "/t1/0/a=1,/t2/0/a=2,/t3/0/a=3" {
			t.Fatalf("writes of c2: %s", got)
		}
		if rep := writes(t, h, "", "c5", "t1", "", "0:a:1"); rep.Status != 409 {
			t.Fatalf("writes past the cap once every id is stored: %d %s", rep.Status, rep.Body)
		}
	})
}

// TestValuesCap: a put to an id the thread holds adds channel values too,
// so the thread's values are capped (100 x CHECKPOINTS_MAX_PER_THREAD, at
// least 1 000); a put that only repeats stored values is welcome at the cap.
func TestValuesCap(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"CHECKPOINTS_MAX_PER_THREAD": "15"}) // 1 500 values
		batch := func(round int) map[string]string {
			vals := map[string]string{}
			for i := range 500 {
				vals[fmt.Sprintf("ch%d", i)] = fmt.Sprintf("%d=%d", round, i)
			}
			return vals
		}
		for round := 1; round <= 3; round++ {
			want(t, put(t, h, base, "", "c1", "", `{}`, batch(round)), 200)
		}
		want(t, put(t, h, base, "", "c1", "", `{}`, batch(3)), 200) // nothing new
		rep := put(t, h, base, "", "c1", "", `{}`, batch(4))
		if rep.Status != 409 || rep.Code() != "checkpoints_full" {
			t.Fatalf("values past the cap: %d %s", rep.Status, rep.Body)
		}
		tp, _ := get(t, h, "", "c1")
		if len(tp.ChannelValues) != 500 || tp.ChannelValues[0].Version != "3" {
			t.Fatalf("the refused put changed c1: %d values, %+v", len(tp.ChannelValues), tp.ChannelValues[0])
		}
		want(t, put(t, h, base, "", "c2", "c1", `{}`, map[string]string{"ch0": "3"}), 200) // no value: welcome
	})
}

// TestKeysMadeAnewGetTTL: the thread's keys, removed by another program
// while the session lives (it has their families), get the session's TTL
// when a put or a write makes them again, never a key without expiry that
// would outlive the session.
func TestKeysMadeAnewGetTTL(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "600"})
		c := srv.Client(t)
		l := srv.Layout()
		keys := []string{l.SessionKey(checkpoints.HashFamily, "u1", "t1"), l.SessionKey(checkpoints.OrderFamily, "u1", "t1")}
		for i, write := range []func() sidecartest.Reply{
			func() sidecartest.Reply { return put(t, h, base, "", "c1", "", `{}`, map[string]string{"a": "1=1"}) },
			func() sidecartest.Reply { return writes(t, h, "", "c2", "ta", "", "0:x:1") }, // before its checkpoint
			func() sidecartest.Reply { return put(t, h, base, "", "c1", "", `{}`, map[string]string{"a": "1=1"}) },
		} {
			want(t, write(), 200)
			for _, k := range keys {
				if ttl, _ := c.Do(t.Context(), c.B().Ttl().Key(k).Build()).AsInt64(); ttl <= 0 || ttl > 600 {
					t.Fatalf("write %d: %s TTL %d, want the session's", i, k, ttl)
				}
				c.Do(t.Context(), c.B().Del().Key(k).Build())
			}
		}
	})
}
