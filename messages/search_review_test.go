package messages_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
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
	words := make([]string, 256)
	for i := range words {
		words[i] = fmt.Sprintf("w%cx%c", 'a'+i%26, 'a'+i/26)
	}
	text := strings.Join(words, " ")
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		content := text
		if i == 999 {
			content = "xylophonist " + strings.Join(words[1:], " ")
		}
		fmt.Fprintf(&b, `{"id":"m%d","role":"user","content":%q}`, i, content)
	}
	b.WriteString(`]}`)
	for _, cmd := range [][]string{{"CONFIG", "SET", "slowlog-log-slower-than", "100000"}, {"SLOWLOG", "RESET"}} {
		if err := c.Do(t.Context(), c.B().Arbitrary(cmd...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if rep := h.Do(t, "POST", "/v1/users/alice/sessions/big/messages", b.String()); rep.Status != 201 {
		t.Fatal(rep)
	}
	found := false
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !found; time.Sleep(50 * time.Millisecond) {
		rep := h.Do(t, "GET", "/v1/users/alice/sessions/big/search?rank=relevance&q=xylophonist", "")
		if rep.Status != 200 {
			t.Fatal(rep)
		}
		found = strings.Contains(rep.Body, `"m999"`)
	}
	if !found {
		t.Error("the batch's last message is never found")
	}
	logged, err := c.Do(t.Context(), c.B().Arbitrary("SLOWLOG", "GET", "100").Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range logged {
		f, _ := e.ToArray()
		if len(f) < 4 {
			continue
		}
		us, _ := f[2].AsInt64()
		args, _ := f[3].AsStrSlice()
		if len(args) > 2 {
			args = args[:2]
		}
		t.Errorf("SLOWLOG: %d µs: %q", us, args)
	}
	n, _ := c.Do(t.Context(), c.B().Hget().Key(srv.Layout().SearchDocs("alice", "big")).Field(" n").Build()).ToString()
	if n != "1000" {
		t.Errorf("the index holds %q documents, want 1000", n)
	}
}
