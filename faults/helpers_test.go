package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
	"github.com/agentsidecar/agentsidecar/usage"
)

// startHost runs a real host with the sessions, usage and locks modules
// against srv. TTLs are long enough never to expire during a test.
func startHost(t *testing.T, srv *redisstoretest.Server, env envconf.Env) *sidecartest.Host {
	t.Helper()
	full := envconf.Env{"SESSION_TTL_SECONDS": "3600", "AGENTIC_LOCK_EXPIRE": "600"}
	for k, v := range env {
		full[k] = v
	}
	return sidecartest.Start(t, srv, full, sessions.Factory, usage.Factory, locks.Factory)
}

// qaFields are the ten fields of Cognee's SessionQAEntry, all of which every
// stored entry must carry.
var qaFields = []string{"time", "qa_id", "question", "context", "answer", "feedback_text",
	"feedback_score", "used_graph_element_ids", "memify_metadata", "used_session_context_ids"}

// storedEntry is one element of a session list, decoded.
type storedEntry struct {
	QAID   string
	Score  *int
	Fields map[string]json.RawMessage
}

// checkSession reads one session straight from Redis and through the API
// and fails the test unless everything agrees: every list element is one
// whole JSON object with the ten fields, qa_ids are unique, the qa_id index
// describes the list exactly (length, last, every position, nothing else),
// the record's entry_count is the list's length, every entry reads back by
// qa_id, and last_n lists the same (newest) entries in the same order. It returns
// the entries, oldest first.
func checkSession(t *testing.T, rc rueidis.Client, c *sidecartest.Client, user, session string) []storedEntry {
	t.Helper()
	ctx := context.Background()
	keys := redisstore.Layout{}.Session(user, session)
	name := user + "/" + session
	raw, err := rc.Do(ctx, rc.B().Lrange().Key(keys.Entries).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("%s: LRANGE: %v", name, err)
	}
	entries := make([]storedEntry, 0, len(raw))
	pos := map[string]int{}
	for i, el := range raw {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(el), &fields); err != nil {
			t.Fatalf("%s: element %d is not a JSON object (%v): %q", name, i, err, el)
		}
		for _, f := range qaFields {
			if _, ok := fields[f]; !ok {
				t.Errorf("%s: element %d lacks %q: %s", name, i, f, el)
			}
		}
		if len(fields) != len(qaFields) {
			t.Errorf("%s: element %d has %d fields, want %d: %s", name, i, len(fields), len(qaFields), el)
		}
		var e storedEntry
		e.Fields = fields
		if err := json.Unmarshal(fields["qa_id"], &e.QAID); err != nil || e.QAID == "" {
			t.Fatalf("%s: element %d has no string qa_id: %s", name, i, el)
		}
		if err := json.Unmarshal(fields["feedback_score"], &e.Score); err != nil {
			t.Errorf("%s: element %d: feedback_score %s: %v", name, i, fields["feedback_score"], err)
		}
		if j, dup := pos[e.QAID]; dup {
			t.Errorf("%s: qa_id %s stored twice (positions %d and %d)", name, e.QAID, j, i)
		}
		pos[e.QAID] = i
		entries = append(entries, e)
	}

	index, err := rc.Do(ctx, rc.B().Hgetall().Key(keys.Index).Build()).AsStrMap()
	if err != nil {
		t.Fatalf("%s: HGETALL index: %v", name, err)
	}
	if len(entries) > 0 || len(index) > 0 {
		head, _ := strconv.Atoi(index["#head"])
		if got := index["#len"]; got != strconv.Itoa(len(entries)) {
			t.Errorf("%s: index #len %q, list length %d", name, got, len(entries))
		}
		// #first and #last are the fingerprints (qa_id and time) of the
		// first and last elements.
		if n := len(entries); n > 0 && (index["#last"] != fingerprint(entries[n-1]) || index["#first"] != fingerprint(entries[0])) {
			t.Errorf("%s: index #first %q, #last %q, want the fingerprints of %s and %s", name, index["#first"], index["#last"], entries[0].QAID, entries[n-1].QAID)
		}
		for id, seq := range index {
			if strings.HasPrefix(id, "#") {
				continue
			}
			p, ok := pos[id]
			if !ok {
				t.Errorf("%s: index holds qa_id %s that the list does not", name, id)
				continue
			}
			if seq != strconv.Itoa(p+head) {
				t.Errorf("%s: index puts %s at %s, list at %d (+head %d)", name, id, seq, p, head)
			}
		}
		for id := range pos {
			if _, ok := index[id]; !ok {
				t.Errorf("%s: list holds qa_id %s that the index does not", name, id)
			}
		}
	}

	count, err := rc.Do(ctx, rc.B().Hget().Key(keys.Record).Field("entry_count").Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err) && len(entries) == 0:
	case err != nil:
		t.Errorf("%s: record entry_count: %v (list has %d)", name, err, len(entries))
	case count != strconv.Itoa(len(entries)):
		t.Errorf("%s: record entry_count %s, list length %d", name, count, len(entries))
	}

	base := "/v1/users/" + user + "/sessions/" + session + "/entries"
	for _, e := range entries {
		r := c.Send(ctx, "GET", base+"/"+e.QAID, "")
		var got struct {
			QAID string `json:"qa_id"`
		}
		if r.Err != nil || r.Status != 200 || json.Unmarshal([]byte(r.Body), &got) != nil || got.QAID != e.QAID {
			t.Errorf("%s: GET entry %s: %s", name, e.QAID, r)
		}
	}
	r := c.Send(ctx, "GET", base+"?last_n="+strconv.Itoa(sessions.MaxLastN), "")
	var listed []struct {
		QAID string `json:"qa_id"`
	}
	if r.Err != nil || r.Status != 200 || json.Unmarshal([]byte(r.Body), &listed) != nil {
		t.Fatalf("%s: list: %s", name, r)
	}
	var want, got []string
	for _, e := range entries[max(0, len(entries)-sessions.MaxLastN):] {
		want = append(want, e.QAID)
	}
	for _, e := range listed {
		got = append(got, e.QAID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: API lists %v, Redis holds %v", name, got, want)
	}
	return entries
}

// latencies summarises durations for the log.
type latencies []time.Duration

func (l latencies) String() string {
	if len(l) == 0 {
		return "none"
	}
	s := slices.Clone(l)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[int(p*float64(len(s)-1))].Round(100 * time.Microsecond) }
	return fmt.Sprintf("n=%d p50=%s p90=%s max=%s", len(s), q(0.5), q(0.9), s[len(s)-1].Round(100*time.Microsecond))
}

func (l latencies) max() time.Duration {
	if len(l) == 0 {
		return 0
	}
	return slices.Max(l)
}

// jsonInto decodes body into v and reports whether that worked.
func jsonInto(body string, v any) bool { return json.Unmarshal([]byte(body), v) == nil }

// fingerprint is what the qa_id index keeps of an entry to recognise it:
// its qa_id and its time (lua/lib/idindex.lua).
func fingerprint(e storedEntry) string {
	var at string
	_ = json.Unmarshal(e.Fields["time"], &at)
	return e.QAID + " " + at
}
