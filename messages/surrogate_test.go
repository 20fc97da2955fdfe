package messages_test

import (
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// loneItem is an OpenAI Agents item whose text holds escaped lone
// surrogates, as JavaScript strings do: text cut by .slice() in the middle
// of an emoji ("\ud83d" without its "\ude00"), a low half alone, two high
// halves, and one in a key.
func loneItem(id string) string {
	return `{"id":"` + id + `","role":"assistant","format":"openai.responses","item":{"type":"message","id":"c-` + id +
		`","content":[{"type":"output_text","text":"deploy log cut at \ud83d"}],"extra":["\udc00 tail","\ud800\ud800x"],"k\udfff":1}}`
}

// itemOf is the item member's bytes of one message's JSON (the body as sent
// or as answered): from `"item":` to the matching brace.
func itemOf(t *testing.T, body string) string {
	t.Helper()
	at := strings.Index(body, `"item":`)
	if at < 0 {
		t.Fatalf("no item in %s", body)
	}
	b := body[at+len(`"item":`):]
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return b[:i+1]
			}
		}
	}
	t.Fatalf("unterminated item in %s", body)
	return ""
}

// An item is the framework's own data: escaped lone surrogates in it are
// kept byte for byte, in Redis and in every answer, through an append, a
// batch, PUT, PATCH, the history transactions, a pop and a compaction; its
// text still counts for tokens and search. Everywhere else (content,
// parts, metadata, another route's body) they stay refused, and bytes that
// are not UTF-8 stay refused in items too.
func TestItemsKeepLoneSurrogates(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
		want := itemOf(t, loneItem("x"))
		c := srv.Client(t)
		stored := func(id string) string {
			t.Helper()
			k := srv.Layout().SessionKey(redisstore.MessagesFamily, "alice", "s1")
			v, err := c.Do(t.Context(), c.B().Hget().Key(k).Field(id).Build()).ToString()
			if err != nil {
				t.Fatalf("HGET %s %s: %v", k, id, err)
			}
			return v
		}
		check := func(what, id, body string) {
			t.Helper()
			if got := itemOf(t, body); got != strings.ReplaceAll(want, `c-x`, `c-`+id) {
				t.Errorf("%s: item answered as %s", what, got)
			}
			if got := itemOf(t, stored(id)); got != strings.ReplaceAll(want, `c-x`, `c-`+id) {
				t.Errorf("%s: item stored as %s", what, got)
			}
		}
		rep := h.Do(t, "POST", msgs, loneItem("m1"))
		if rep.Status != 201 {
			t.Fatalf("append: %s", rep)
		}
		check("append", "m1", rep.Body)
		if strings.Contains(rep.Body, `"tokens":0`) {
			t.Errorf("the item's text counted no tokens: %s", rep.Body)
		}
		rep = h.Do(t, "POST", msgs, `{"messages":[`+loneItem("m2")+`,`+loneItem("m3")+`]}`)
		if rep.Status != 201 {
			t.Fatalf("batch: %s", rep)
		}
		check("batch", "m3", stored("m3"))
		if rep = h.Do(t, "POST", msgs, loneItem("m1")); rep.Status != 200 {
			t.Errorf("the same append again (a retry): %s", rep)
		}
		if rep = h.Do(t, "PUT", msgs+"/m4", loneItem("m4")); rep.Status != 201 {
			t.Fatalf("PUT: %s", rep)
		}
		check("PUT", "m4", rep.Body)
		if rep = h.Do(t, "PATCH", msgs+"/m2", `{"item":`+itemOf(t, loneItem("m5"))+`}`); rep.Status != 200 {
			t.Fatalf("PATCH: %s", rep)
		}
		if got := itemOf(t, stored("m2")); !strings.Contains(got, `"c-m5"`) || !strings.Contains(got, `cut at \ud83d"`) {
			t.Errorf("PATCH stored %s", got)
		}
		// history transactions: append_items, replace_suffix, replace_history
		tx(t, h, `{"operation_id":"op-1","type":"append_items","messages":[`+loneItem("t1")+`]}`, 201, "")
		check("append_items", "t1", stored("t1"))
		tx(t, h, `{"operation_id":"op-2","type":"replace_suffix","expected_suffix":[`+loneItem("t1")+`],"messages":[`+loneItem("t2")+`]}`, 201, "")
		check("replace_suffix", "t2", stored("t2"))
		// the whole history read as the adapters read it
		rep = h.Do(t, "GET", msgs+"?compacted=false&limit=1000", "")
		if rep.Status != 200 || strings.Count(rep.Body, `cut at \ud83d"`) != 5 {
			t.Fatalf("read: %s", rep)
		}
		// search: the item's words are found
		if got := find(t, h, "/v1/users/alice/sessions/s1/search?rank=relevance&", "deploy"); len(got) == 0 {
			t.Errorf("search found none of the items")
		}
		if got := find(t, h, "/v1/users/alice/search?", "deploy"); len(got) == 0 {
			t.Errorf("the user's search found none of the items")
		}
		// a compaction over them, then a pop of the newest
		if rep = h.Do(t, "POST", "/v1/users/alice/sessions/s1/compactions", `{"summary":"cut logs","from_id":"m1","to_id":"m3"}`); rep.Status != 201 {
			t.Fatalf("compaction: %s", rep)
		}
		if rep = h.Do(t, "GET", msgs+"?limit=1000", ""); rep.Status != 200 || !strings.Contains(rep.Body, `cut at \ud83d"`) {
			t.Fatalf("read with the compaction: %s", rep)
		}
		rep = h.Do(t, "POST", msgs+"/pop", "")
		if rep.Status != 200 {
			t.Fatalf("pop: %s", rep)
		}
		if got := itemOf(t, rep.Body); got != strings.ReplaceAll(want, `c-x`, `c-t2`) {
			t.Errorf("pop answered %s", got)
		}
		tx(t, h, `{"operation_id":"op-3","type":"replace_history","messages":[`+loneItem("r1")+`]}`, 201, "")
		check("replace_history", "r1", stored("r1"))

		// elsewhere: refused, nothing stored
		for _, body := range []string{
			`{"role":"user","content":"cut \ud83d"}`,
			`{"role":"user","parts":[{"type":"text","text":"\udc00"}]}`,
			`{"role":"user","content":"hi","metadata":{"k":"\ud800"}}`,
			`{"role":"user","content":"hi","item":{"x":"` + "\xff" + `"}}`,
			`{"messages":[{"role":"user","content":"\ud800"}]}`,
			`{"role\ud800":"user","content":"hi"}`,
		} {
			if rep := h.Do(t, "POST", msgs, body); rep.Status != 400 || rep.Code() != "invalid_json" {
				t.Errorf("%s: %s, want 400 invalid_json", body, rep)
			}
		}
		if rep := h.Do(t, "POST", "/v1/users/alice/sessions/s1/entries", `{"question":"q \ud800","answer":"a"}`); rep.Status != 400 || rep.Code() != "invalid_json" {
			t.Errorf("a Q&A entry with a lone surrogate: %s", rep)
		}
	})
}
