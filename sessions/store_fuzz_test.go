package sessions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// modelEntry is what the store must hold for one entry.
type modelEntry struct {
	id     string
	score  int // 0 = null
	memify map[string]bool
}

const fuzzMax = 5 // SESSION_MAX_ENTRIES in the fuzzed store

// FuzzStoreOperations drives the session store through random sequences of
// appends, feedback, memify merges, deletes and Cognee's own writes (RPUSH,
// and its delete as DEL + re-RPUSH), checking the list in Redis against an
// in-memory model after every step, on miniredis and on a real Redis. After
// every step every element is one Cognee's model accepts
// (cognee.CheckQAEntry: valid JSON, each field's type, memify values
// booleans) with no key twice; a field or memify key named twice in one
// update is set once, to its last value; the list is trimmed in batches
// (past 1.25 N, back to N) exactly as the model says. The context list is
// driven and checked the same way. Cognee's bulk appends (300 entries)
// make the id index take several steps and the next trim drop it, and its
// delete-then-recreate keeps the list's length and last qa_id. After every
// step every key of the session has a TTL (the session has one), and after
// every call of the sidecar on a list its id index, when there is one,
// describes a prefix of the list exactly (checkIndex).
func FuzzStoreOperations(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 2, 1, 3, 1, 6, 0})
	f.Add([]byte{5, 3, 0, 3, 4, 0, 1, 3, 2, 3, 6, 3})
	f.Add([]byte{0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 1, 6, 6, 0})
	f.Add([]byte{0, 1, 4, 0, 0, 1, 3, 1, 0, 2, 2, 2, 6, 2, 4, 0})
	f.Add([]byte{0, 1, 2, 9, 7, 1, 2, 1, 7, 17, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 2, 7, 7, 7})
	f.Add([]byte{0, 1, 0, 2, 8, 0, 1, 3, 0, 4, 6, 2, 9, 5, 6, 5, 0, 5, 3, 1, 10, 1, 10, 2, 10, 17, 11, 1, 11, 9, 10, 3})
	f.Add([]byte{0, 1, 0, 2, 0, 3, 9, 4, 6, 4, 0, 4, 8, 1, 1, 1, 3, 2, 10, 1, 10, 2, 10, 3, 10, 4, 10, 5, 10, 6, 10, 7, 11, 3, 11, 10, 10, 19})
	type backend struct {
		name  string
		store *sessions.Store
		raw   rueidis.Client
	}
	var backends []backend
	for _, s := range []*redisstoretest.Server{redisstoretest.NewMini(f), realOrNil(f)} {
		if s == nil {
			continue
		}
		runner := sessionstore.New(s.Conn(f), sessionstore.Config{TTLSeconds: 600, MaxEntries: fuzzMax, AbandonAfterSeconds: 1800})
		backends = append(backends, backend{s.Backend, sessions.NewStore(runner), s.Client(f)})
	}
	keys := redisstore.Layout{}.Session("fz", "s")
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 80 {
			ops = ops[:80]
		}
		for _, b := range backends {
			ctx := context.Background()
			b.raw.Do(ctx, b.raw.B().Flushall().Build())
			var model []modelEntry
			var ctxModel []string
			n, traces := 0, 0
			for i := 0; i+1 < len(ops); i += 2 {
				op, id := ops[i]%12, fmt.Sprintf("e%d", ops[i+1]%8)
				pos := slices.IndexFunc(model, func(m modelEntry) bool { return m.id == id })
				step := fmt.Sprintf("%s step %d: op %d on %s", b.name, i/2, op, id)
				switch op {
				case 0: // append through the store (a retry when present)
					entry, _ := cognee.NewQAEntry(cognee.QAFields{Question: json.RawMessage(`"q"`), Answer: json.RawMessage(`"a"`)}, id, time.Now())
					st, _, err := b.store.Append(ctx, "fz", "s", id, entry, search.Eager)
					if err != nil || st.Created != (pos < 0) {
						t.Fatalf("%s: created %v, err %v", step, st.Created, err)
					}
					if pos < 0 {
						model = append(model, modelEntry{id: id})
						if len(model)*4 > fuzzMax*5 { // past 1.25 N: back to the newest N
							model = model[len(model)-fuzzMax:]
						}
					}
				case 1: // feedback
					n++
					score := n%5 + 1
					_, err := b.store.UpdateEntry(ctx, "fz", "s", id, [][2]string{{"feedback_score", fmt.Sprint(score)}}, nil)
					if (err == nil) != (pos >= 0) {
						t.Fatalf("%s: err %v", step, err)
					}
					if pos >= 0 {
						model[pos].score = score
					}
				case 2: // memify merge, a key sometimes named twice (the last wins)
					k := fmt.Sprintf("k%d", i%3)
					v, last := ops[i]&8 == 0, ops[i]&16 == 0
					patch := fmt.Sprintf(`{%q: %v}`, k, v)
					if ops[i+1]&8 != 0 {
						patch = fmt.Sprintf(`{%q: %v, "k9": true, %q: %v}`, k, v, k, last)
						v = last
					}
					_, err := b.store.UpdateEntry(ctx, "fz", "s", id, nil, []byte(patch))
					if (err == nil) != (pos >= 0) {
						t.Fatalf("%s: err %v", step, err)
					}
					if pos >= 0 {
						if model[pos].memify == nil {
							model[pos].memify = map[string]bool{}
						}
						model[pos].memify[k] = v
						if ops[i+1]&8 != 0 {
							model[pos].memify["k9"] = true
						}
					}
				case 7: // one field named twice in one update: set once, to the last value
					first, second := int(ops[i+1])%5+1, int(ops[i]>>3)%5+1
					_, err := b.store.UpdateEntry(ctx, "fz", "s", id,
						[][2]string{{"feedback_score", fmt.Sprint(first)}, {"feedback_text", `"t"`}, {"feedback_score", fmt.Sprint(second)}}, nil)
					if (err == nil) != (pos >= 0) {
						t.Fatalf("%s: err %v", step, err)
					}
					if pos >= 0 {
						model[pos].score = second
					}
				case 3: // delete through the store
					err := b.store.DeleteEntry(ctx, "fz", "s", id)
					if (err == nil) != (pos >= 0) {
						t.Fatalf("%s: err %v", step, err)
					}
					if pos >= 0 {
						model = slices.Delete(model, pos, pos+1)
					}
				case 4: // Cognee deletes the entry at a position: DEL + re-RPUSH
					if len(model) == 0 {
						continue
					}
					at := int(ops[i+1]) % len(model)
					all, _ := b.raw.Do(ctx, b.raw.B().Lrange().Key(keys.Entries).Start(0).Stop(-1).Build()).AsStrSlice()
					all = slices.Delete(all, at, at+1)
					b.raw.Do(ctx, b.raw.B().Del().Key(keys.Entries).Build())
					if len(all) > 0 {
						cogneePush(ctx, b.raw, keys.Entries, all...)
					}
					model = slices.Delete(model, at, at+1)
				case 5: // Cognee appends directly
					if pos >= 0 {
						continue
					}
					entry, _ := cognee.NewQAEntry(cognee.QAFields{Question: json.RawMessage(`"c"`), Answer: json.RawMessage(`"c"`)}, id, time.Now())
					cogneePush(ctx, b.raw, keys.Entries, string(entry))
					model = append(model, modelEntry{id: id})
				case 6: // read one entry, then append a trace step of a size the bytes pick
					got, err := b.store.Entry(ctx, "fz", "s", id)
					if (err == nil) != (pos >= 0) || (pos >= 0 && !json.Valid(got)) {
						t.Fatalf("%s: get %s %v", step, got, err)
					}
					size := 990 + int(ops[i+1])%20 // around the 1000-character cut
					items := 15 + int(ops[i])%10   // around the 20-item cut
					params, _ := json.Marshal(map[string]any{"s": strings.Repeat("é", size), "l": make([]int, items)})
					trace, err := cognee.NewTrace(cognee.TraceFields{OriginFunction: &id, Status: &id, MethodParams: params,
						MethodReturnValue: json.RawMessage(`"` + strings.Repeat("x", size) + `"`)}, "t")
					if err != nil {
						t.Fatalf("%s: trace %v", step, err)
					}
					if err := b.store.AppendTrace(ctx, "fz", "s", trace); err != nil {
						t.Fatalf("%s: trace append %v", step, err)
					}
					if traces++; traces*4 > fuzzMax*5 {
						traces = fuzzMax
					}
				case 8: // Cognee appends 300 entries at once
					model = append(model, cogneeBulk(ctx, b.raw, keys.Entries, i, 300)...)
				case 9: // Cognee deletes its last entry and an older one, creates id, then the last again
					model = cogneeRecreate(ctx, b.raw, keys.Entries, model, id)
				case 10, 11: // context: append, delete, Cognee's delete
					var err error
					if ctxModel, err = contextOp(ctx, b.store, b.raw, keys.Context, ctxModel, op, ops[i+1]); err != nil {
						t.Fatalf("%s: %v", step, err)
					}
				}
				if op <= 3 || op == 6 || op == 7 {
					checkIndex(t, step, b.raw, "qa", keys.Entries, keys.Index)
				}
				if op == 10 || (op == 11 && ops[i+1]&8 == 0) {
					checkIndex(t, step, b.raw, "context", keys.Context, keys.ContextIndex)
				}
				checkTTLs(t, step, b.raw, keys)
				compareIDs(t, step, b.raw, keys.Context, "id", ctxModel)
				compare(t, step, b.raw, keys.Entries, model)
				compareTraces(t, step, b.raw, keys.Traces, traces)
			}
		}
	})
}

func realOrNil(f *testing.F) *redisstoretest.Server {
	if !redisstoretest.RealAvailable() {
		if redisstoretest.RequireReal() {
			f.Fatal("REQUIRE_REAL_REDIS=1 but redis-server is not on PATH")
		}
		return nil
	}
	return redisstoretest.NewReal(f)
}

func compare(t *testing.T, step string, c rueidis.Client, key string, model []modelEntry) {
	t.Helper()
	all, err := c.Do(context.Background(), c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(model) {
		t.Fatalf("%s: %d entries stored, model has %d", step, len(all), len(model))
	}
	for i, raw := range all {
		if err := cognee.CheckQAEntry([]byte(raw)); err != nil {
			t.Fatalf("%s: entry %d is one Cognee's model refuses (%v): %s", step, i, err, raw)
		}
		if k := repeatedKey(raw); k != "" {
			t.Fatalf("%s: entry %d holds key %q twice: %s", step, i, k, raw)
		}
		var e struct {
			QAID          string          `json:"qa_id"`
			FeedbackScore *int            `json:"feedback_score"`
			Memify        map[string]bool `json:"memify_metadata"`
		}
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			t.Fatalf("%s: entry %d is not JSON: %v", step, i, err)
		}
		m := model[i]
		score := 0
		if e.FeedbackScore != nil {
			score = *e.FeedbackScore
		}
		if e.QAID != m.id || score != m.score || len(e.Memify) != len(m.memify) {
			t.Fatalf("%s: entry %d is %s, model %+v", step, i, raw, m)
		}
		for k, v := range m.memify {
			if got, ok := e.Memify[k]; !ok || got != v {
				t.Fatalf("%s: entry %d has memify %s = %v (present %v), model %v: %s", step, i, k, got, ok, v, raw)
			}
		}
	}
}

// repeatedKey returns a key that one object of the JSON text s holds twice
// (at any depth), or "".
func repeatedKey(s string) string {
	dec := json.NewDecoder(strings.NewReader(s))
	type frame struct {
		object bool
		n      int
		keys   map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				if len(stack) > 0 {
					stack[len(stack)-1].n++
				}
				stack = append(stack, &frame{object: d == '{', keys: map[string]bool{}})
			} else {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if len(stack) == 0 {
			continue
		}
		top := stack[len(stack)-1]
		if top.object && top.n%2 == 0 {
			k := tok.(string)
			if top.keys[k] {
				return k
			}
			top.keys[k] = true
		}
		top.n++
	}
}

// compareTraces checks the trace list's length against the model (batch
// trim) and every step against Cognee's limits: text at most 1000
// characters, lists and objects at most 20 items, at every depth.
func compareTraces(t *testing.T, step string, c rueidis.Client, key string, want int) {
	t.Helper()
	all, err := c.Do(context.Background(), c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != want {
		t.Fatalf("%s: %d trace steps stored, model has %d", step, len(all), want)
	}
	var within func(v any) bool
	within = func(v any) bool {
		switch v := v.(type) {
		case string:
			return utf8.RuneCountInString(v) <= cognee.MaxTraceText
		case []any:
			return len(v) <= cognee.MaxTraceItems && !slices.ContainsFunc(v, func(e any) bool { return !within(e) })
		case map[string]any:
			if len(v) > cognee.MaxTraceItems {
				return false
			}
			for k, e := range v {
				if !within(k) || !within(e) {
					return false
				}
			}
		}
		return true
	}
	for i, raw := range all {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil || !within(v) || repeatedKey(raw) != "" {
			t.Fatalf("%s: trace %d is over Cognee's limits or not JSON (%v): %.200s", step, i, err, raw)
		}
	}
}
