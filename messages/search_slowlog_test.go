package messages_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// A batch append of 1 000 messages of 256 distinct words each (words the
// messages share, so each word's postings grow to their cap) used to
// index every document in its one script: 256 000 postings rewritten,
// about 2 s of Redis on this machine, every other client stalled. The
// script now indexes at most messages.SearchCallTerms terms and the
// catch-up the write queues indexes the rest a bounded step at a time:
// no script of the append or of its catch-up reaches Redis's SLOWLOG at
// 100 ms (far above the ~5 ms steps, far below the unbounded script),
// and the last message of the batch is found.
func TestBigBatchIndexedInBoundedSteps(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
	c := srv.Client(t)
	slowlog(t, c, 100000)
	if rep := h.Do(t, "POST", "/v1/users/alice/sessions/big/messages", `{"messages":[`+bigBatch("m", "xylophonist")+`]}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	if !foundEventually(t, h, "xylophonist", `"m999"`) {
		t.Error("the batch's last message is never found")
	}
	noSlowScripts(t, c)
	n, _ := c.Do(t.Context(), c.B().Hget().Key(srv.Layout().SearchDocs("alice", "big")).Field(" n").Build()).ToString()
	if n != "1000" {
		t.Errorf("the index holds %q documents, want 1000", n)
	}
}

// bigBatch is 1 000 messages (ids prefix0..999) of the same 256 words, the
// last with word for the first.
func bigBatch(prefix, word string) string {
	words := make([]string, 256)
	for i := range words {
		words[i] = fmt.Sprintf("w%cx%c", 'a'+i%26, 'a'+i/26)
	}
	var b strings.Builder
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		content := strings.Join(words, " ")
		if i == 999 {
			content = word + " " + strings.Join(words[1:], " ")
		}
		fmt.Fprintf(&b, `{"id":"%s%d","role":"user","content":%q}`, prefix, i, content)
	}
	return b.String()
}

func slowlog(t *testing.T, c rueidis.Client, us int) {
	t.Helper()
	for _, cmd := range [][]string{{"CONFIG", "SET", "slowlog-log-slower-than", strconv.Itoa(us)}, {"SLOWLOG", "RESET"}} {
		if err := c.Do(t.Context(), c.B().Arbitrary(cmd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// foundEventually: a relevance search of session big for q answers a
// body holding want within a minute.
func foundEventually(t *testing.T, h *sidecartest.Host, q, want string) bool {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		rep := h.Do(t, "GET", "/v1/users/alice/sessions/big/search?rank=relevance&q="+q, "")
		if rep.Status != 200 {
			t.Fatal(rep)
		}
		if strings.Contains(rep.Body, want) {
			return true
		}
	}
	return false
}

// noSlowScripts fails for each command in the SLOWLOG.
func noSlowScripts(t *testing.T, c rueidis.Client) {
	t.Helper()
	for _, e := range slowEntries(t, c) {
		t.Errorf("SLOWLOG: %s", e)
	}
}

// slowEntries are the SLOWLOG's commands: µs, the command and its first
// arguments.
func slowEntries(t *testing.T, c rueidis.Client) []string {
	t.Helper()
	logged, err := c.Do(t.Context(), c.B().Arbitrary("SLOWLOG", "GET", "100").Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range logged {
		f, _ := e.ToArray()
		if len(f) < 4 {
			continue
		}
		us, _ := f[2].AsInt64()
		args, _ := f[3].AsStrSlice()
		if len(args) > 8 {
			args = args[:8]
		}
		for i, a := range args {
			if len(a) > 40 {
				args[i] = a[:40]
			}
		}
		out = append(out, fmt.Sprintf("%d µs: %q", us, args))
	}
	return out
}

// A replace_suffix of 1 000 indexed messages (256 shared words each) took
// every one's postings out in its one script (about as long as indexing
// them). It now takes them out as a delete does (search.retire): exactly
// when they hold at most 1 024 postings, else the session's messages are
// dropped from the index and the catch-up the write queues takes the rest
// in again. No script reaches the SLOWLOG at 100 ms; the replaced words are
// no longer found, the new message is.
func TestBigSuffixReplacedInBoundedSteps(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, envconf.Env{"SEARCH_INDEX": "eager"})
	c := srv.Client(t)
	batch := bigBatch("m", "xylophonist")
	if rep := h.Do(t, "POST", "/v1/users/alice/sessions/big/messages", `{"messages":[`+batch+`]}`); rep.Status != 201 {
		t.Fatal(rep)
	}
	if !foundEventually(t, h, "xylophonist", `"m999"`) {
		t.Fatal("the batch's last message is never found")
	}
	slowlog(t, c, 100000)
	body := `{"operation_id":"op-big","type":"replace_suffix","expected_suffix":[` + batch +
		`],"messages":[{"id":"n1","role":"user","content":"a zeppelin"}]}`
	if rep := h.Do(t, "POST", "/v1/users/alice/sessions/big/messages/transactions", body); rep.Status != 201 {
		t.Fatal(rep)
	}
	if !foundEventually(t, h, "zeppelin", `"n1"`) {
		t.Error("the new message is never found")
	}
	if rep := h.Do(t, "GET", "/v1/users/alice/sessions/big/search?rank=relevance&q=xylophonist", ""); rep.Status != 200 || strings.Contains(rep.Body, `"m999"`) {
		t.Errorf("a replaced message is found: %s", rep)
	}
	noSlowScripts(t, c)
}
