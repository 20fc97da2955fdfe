package sessions_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessions"
)

// Helpers of FuzzStoreOperations for Cognee's writes, the context list and
// the index and TTL invariants.

// cogneePush is Cognee's write: RPUSH, then EXPIRE.
func cogneePush(ctx context.Context, c rueidis.Client, key string, vals ...string) {
	c.Do(ctx, c.B().Rpush().Key(key).Element(vals...).Build())
	c.Do(ctx, c.B().Expire().Key(key).Seconds(600).Build())
}

// cogneeRewrite is Cognee's delete: DEL, then RPUSH of the survivors.
func cogneeRewrite(ctx context.Context, c rueidis.Client, key string, keep []string) {
	c.Do(ctx, c.B().Del().Key(key).Build())
	if len(keep) > 0 {
		cogneePush(ctx, c, key, keep...)
	}
}

func newEntry(id string) string {
	e, _ := cognee.NewQAEntry(cognee.QAFields{Question: json.RawMessage(`"c"`), Answer: json.RawMessage(`"c"`)}, id, time.Now())
	return string(e)
}

// cogneeBulk appends n entries of its own ids at once; returns their model.
func cogneeBulk(ctx context.Context, c rueidis.Client, key string, step, n int) []modelEntry {
	els, out := make([]string, n), make([]modelEntry, n)
	for k := range n {
		out[k].id = fmt.Sprintf("b%d-%d", step, k)
		els[k] = newEntry(out[k].id)
	}
	cogneePush(ctx, c, key, els...)
	return out
}

// cogneeRecreate deletes the first and the last entry (one rewrite), then
// creates id (when the session does not hold it) and the last entry's
// qa_id again: often the length and the last qa_id the sidecar saw.
func cogneeRecreate(ctx context.Context, c rueidis.Client, key string, model []modelEntry, id string) []modelEntry {
	if len(model) < 2 {
		return model
	}
	all, _ := c.Do(ctx, c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
	last := model[len(model)-1].id
	cogneeRewrite(ctx, c, key, all[1:len(all)-1])
	model = slices.Clone(model[1 : len(model)-1])
	var els []string
	if !slices.ContainsFunc(model, func(m modelEntry) bool { return m.id == id }) && id != last {
		els = append(els, newEntry(id))
		model = append(model, modelEntry{id: id})
	}
	cogneePush(ctx, c, key, append(els, newEntry(last))...)
	return append(model, modelEntry{id: last})
}

// contextOp is one context step: op 10 appends x<arg%8> through the store
// (or, with arg&16, updates it); op 11 deletes it through the store (or,
// with arg&8, Cognee deletes the element at arg's position). It returns
// the model after the step, or what the store did wrong.
func contextOp(ctx context.Context, st *sessions.Store, c rueidis.Client, key string, model []string, op, arg byte) ([]string, error) {
	id := fmt.Sprintf("x%d", arg%8)
	pos := slices.Index(model, id)
	switch {
	case op == 10 && arg&16 != 0:
		_, err := st.UpdateContext(ctx, "fz", "s", id, []byte(fmt.Sprintf(`{"v": %d}`, arg)))
		if (err == nil) != (pos >= 0) {
			return model, fmt.Errorf("context update of %s: err %v, present %v", id, err, pos >= 0)
		}
	case op == 10:
		res, err := st.AppendContext(ctx, "fz", "s", id, []byte(fmt.Sprintf(`{"id": %q, "n": %d}`, id, arg)))
		if err != nil || res.Created != (pos < 0) {
			return model, fmt.Errorf("context append of %s: created %v, err %v", id, res.Created, err)
		}
		if pos < 0 {
			model = append(model, id)
			if len(model)*4 > fuzzMax*5 {
				model = model[len(model)-fuzzMax:]
			}
		}
	case arg&8 != 0:
		if len(model) == 0 {
			return model, nil
		}
		at := int(arg) % len(model)
		all, _ := c.Do(ctx, c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
		cogneeRewrite(ctx, c, key, slices.Delete(all, at, at+1))
		model = slices.Delete(model, at, at+1)
	default:
		err := st.DeleteContext(ctx, "fz", "s", id)
		if (err == nil) != (pos >= 0) || (err != nil && !errors.Is(err, redisstore.ErrNotFound)) {
			return model, fmt.Errorf("context delete of %s: err %v, present %v", id, err, pos >= 0)
		}
		if pos >= 0 {
			model = slices.Delete(model, pos, pos+1)
		}
	}
	return model, nil
}

// fingerprintOf is what the index keeps of an element (lua/lib/idindex.lua,
// fingerprint): a Q&A entry's qa_id and time, a context entry's SHA1.
func fingerprintOf(which, el string) string {
	if which == "context" {
		sum := sha1.Sum([]byte(el))
		return hex.EncodeToString(sum[:])
	}
	var e struct {
		QAID string `json:"qa_id"`
		Time string `json:"time"`
	}
	_ = json.Unmarshal([]byte(el), &e)
	return e.QAID + " " + e.Time
}

func elementID(which, el string) string {
	var e map[string]any
	_ = json.Unmarshal([]byte(el), &e)
	field := "qa_id"
	if which == "context" {
		field = "id"
	}
	id, _ := e[field].(string)
	return id
}

// checkIndex: the id index of list, when there is one, describes a prefix
// of it exactly: '#len' at most the list's length, '#first' and '#last'
// the fingerprints of its first and last covered elements, every covered
// id at head + its position, and no other id.
func checkIndex(t *testing.T, step string, c rueidis.Client, which, list, index string) {
	t.Helper()
	ctx := context.Background()
	idx, err := c.Do(ctx, c.B().Hgetall().Key(index).Build()).AsStrMap()
	if err != nil || len(idx) == 0 {
		return
	}
	all, _ := c.Do(ctx, c.B().Lrange().Key(list).Start(0).Stop(-1).Build()).AsStrSlice()
	covered, err1 := strconv.Atoi(idx["#len"])
	head, err2 := strconv.Atoi(idx["#head"])
	if err1 != nil || err2 != nil || covered < 1 || covered > len(all) {
		t.Fatalf("%s: %s index %v does not describe a prefix of a list of %d", step, which, idx, len(all))
	}
	if idx["#first"] != fingerprintOf(which, all[0]) || idx["#last"] != fingerprintOf(which, all[covered-1]) {
		t.Fatalf("%s: %s index fingerprints %q %q, want those of %s and %s", step, which, idx["#first"], idx["#last"], all[0], all[covered-1])
	}
	ids := 0
	for p := range covered {
		id := elementID(which, all[p])
		if id == "" {
			continue
		}
		ids++
		if idx[id] != strconv.Itoa(head+p) {
			t.Fatalf("%s: %s index maps %s to %q, want %d (head %d, position %d)", step, which, id, idx[id], head+p, head, p)
		}
	}
	fields := 0
	for k := range idx {
		if !strings.HasPrefix(k, "#") {
			fields++
		}
	}
	if fields != ids {
		t.Fatalf("%s: %s index holds %d ids, the %d covered elements %d: %v", step, which, fields, covered, ids, idx)
	}
}

// checkTTLs: every key of the session that exists has a TTL (the fuzzed
// session has one, and Cognee sets its own on every write).
func checkTTLs(t *testing.T, step string, c rueidis.Client, k redisstore.SessionKeys) {
	t.Helper()
	for _, key := range []string{k.Entries, k.Traces, k.Context, k.Record, k.Index, k.ContextIndex} {
		if ms, _ := c.Do(context.Background(), c.B().Pttl().Key(key).Build()).AsInt64(); ms == -1 {
			t.Fatalf("%s: %s has no TTL", step, key)
		}
	}
}

// compareIDs: the ids of list key, in order, are want.
func compareIDs(t *testing.T, step string, c rueidis.Client, key, field string, want []string) {
	t.Helper()
	all, _ := c.Do(context.Background(), c.B().Lrange().Key(key).Start(0).Stop(-1).Build()).AsStrSlice()
	got := listIDs(t, all, field)
	if !slices.Equal(got, want) && (len(got) > 0 || len(want) > 0) {
		t.Fatalf("%s: %s holds %v, model %v", step, key, got, want)
	}
}
