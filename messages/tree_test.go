package messages_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/messages"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A random tree of 300 messages (random parents, some new roots, batches):
// the path to every leaf read through the jump pointers, in pages and in
// both orders, equals the parent chain the test kept itself.
func TestRandomTreePaths(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		rng := rand.New(rand.NewPCG(1, 2))
		parent := map[string]string{}
		var all []string
		latest := ""
		for len(all) < 300 {
			var p string
			body := ""
			switch r := rng.IntN(10); {
			case r == 0 || len(all) == 0:
				body = `,"parent_id":null`
			case r < 4:
				p = latest
			default:
				p = all[rng.IntN(len(all))]
				body = `,"parent_id":"` + p + `"`
			}
			n := 1 + rng.IntN(3) // a chained batch of n
			var b []string
			for i := range n {
				id := fmt.Sprintf("n%d", len(all))
				extra := ""
				if i == 0 {
					extra = body
				}
				b = append(b, `{"id":"`+id+`","role":"user","content":"x"`+extra+`}`)
				parent[id] = p
				p = id
				all = append(all, id)
			}
			latest = p
			if rep := h.Do(t, "POST", msgs, `{"messages":[`+strings.Join(b, ",")+`]}`); rep.Status != 201 {
				t.Fatalf("append: %s", rep)
			}
		}
		chain := func(id string) []string {
			var out []string
			for ; id != ""; id = parent[id] {
				out = append(out, id)
			}
			slices.Reverse(out)
			return out
		}
		for _, leaf := range all[len(all)-40:] {
			want := chain(leaf)
			// asc in pages of 7
			var got []string
			q := "limit=7&leaf=" + leaf
			for {
				p := path(t, h, q)
				if p.Total != int64(len(want)) {
					t.Fatalf("leaf %s: total %d, want %d", leaf, p.Total, len(want))
				}
				for _, m := range p.Messages {
					got = append(got, m.ID)
				}
				if p.NextCursor == nil {
					break
				}
				q = "limit=7&leaf=" + leaf + "&after=" + *p.NextCursor
			}
			if !slices.Equal(got, want) {
				t.Fatalf("leaf %s: asc pages %v, want %v", leaf, got, want)
			}
			// desc from an offset
			off := rng.IntN(len(want))
			p := path(t, h, fmt.Sprintf("order=desc&limit=5&offset=%d&leaf=%s", off, leaf))
			var wantDesc []string
			for i := len(want) - 1 - off; i >= 0 && len(wantDesc) < 5; i-- {
				wantDesc = append(wantDesc, want[i])
			}
			if g := strings.Split(ids(p), ","); ids(p) != strings.Join(wantDesc, ",") {
				t.Fatalf("leaf %s desc offset %d: %v, want %v", leaf, off, g, wantDesc)
			}
		}
		if got := ids(path(t, h, "order=desc&limit=1")); got != latest {
			t.Fatalf("latest leaf %s, want %s", got, latest)
		}
	})
}

// SESSION_COMPACT_AFTER_TOKENS: reads say compaction_suggested once the
// latest path holds more tokens, and a compaction that shortens it clears it.
func TestCompactionSuggested(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_COMPACT_AFTER_TOKENS": "25"})
		post(t, h, `{"id":"a","role":"user","content":"word word word word"}`, 201) // 10 tokens
		post(t, h, `{"id":"b","role":"user","content":"word word word word"}`, 201)
		if path(t, h, "").CompactionSuggested {
			t.Fatal("suggested at 20 tokens of 25")
		}
		post(t, h, `{"id":"c","role":"user","content":"word word word word"}`, 201)
		if !path(t, h, "").CompactionSuggested || !path(t, h, "leaf=a").CompactionSuggested {
			t.Fatal("not suggested at 30 tokens of 25 (any page of the session)")
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/compactions", `{"summary":"ab","from_id":"a","to_id":"b"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		if p := path(t, h, ""); p.CompactionSuggested || p.TotalTokens != 6+10 {
			t.Fatalf("after compaction: suggested %v, tokens %d", p.CompactionSuggested, p.TotalTokens)
		}
	})
}

// compaction_suggested is about the latest path as it reads with its
// compactions (as the compaction_suggested event counts it), whatever the
// page: a raw read (compacted=false) of the latest leaf says what a raw
// read of another leaf, and a compacted read, say.
func TestCompactionSuggestedOnARawRead(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SESSION_COMPACT_AFTER_TOKENS": "25"})
		for _, id := range []string{"a", "b", "c"} {
			post(t, h, `{"id":"`+id+`","role":"user","content":"word word word word"}`, 201) // 10 tokens
		}
		if !path(t, h, "compacted=false").CompactionSuggested {
			t.Fatal("raw read: not suggested at 30 tokens of 25")
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/compactions", `{"summary":"ab","from_id":"a","to_id":"b"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		// the latest path reads as 6 + 10 tokens now
		for _, q := range []string{"", "compacted=false", "compacted=false&leaf=c", "compacted=false&leaf=a", "leaf=a"} {
			if p := path(t, h, q); p.CompactionSuggested {
				t.Errorf("?%s after the compaction: suggested (total_tokens %d)", q, p.TotalTokens)
			}
		}
	})
}

// The session's TTL covers its message keys: PUT .../ttl persists them and
// sets them, like every key of the session.
func TestMessageKeysFollowTheSessionTTL(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"id":"a","role":"user","content":"x"}`, 201, "Idempotency-Key", "k")
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/compactions", `{"summary":"s","from_id":"a","to_id":"a"}`); rep.Status != 201 {
			t.Fatal(rep)
		}
		k := messages.SessionKeys(srv.Layout(), "alice", "s1")
		keys := []string{k.Messages, k.Tree, k.Children, k.Order, k.Compactions}
		c := srv.Client(t)
		check := func(want func(int64) bool, what string) {
			t.Helper()
			for _, key := range keys {
				ttl, err := c.Do(t.Context(), c.B().Ttl().Key(key).Build()).AsInt64()
				if err != nil || !want(ttl) {
					t.Errorf("%s: TTL %d (%v), want %s", key, ttl, err, what)
				}
			}
		}
		check(func(s int64) bool { return s > 600000 && s <= 604800 }, "SESSION_TTL_SECONDS")
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s1/ttl", `{"ttl_seconds":0}`); rep.Status != 200 {
			t.Fatal(rep)
		}
		check(func(s int64) bool { return s == -1 }, "none (persisted)")
		if rep := h.Do(t, "PUT", "/v1/users/alice/sessions/s1/ttl", `{"ttl_seconds":60}`); rep.Status != 200 {
			t.Fatal(rep)
		}
		check(func(s int64) bool { return s > 0 && s <= 60 }, "60 s")
	})
}
