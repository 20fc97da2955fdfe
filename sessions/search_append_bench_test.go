package sessions_test

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
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// BenchmarkAppendFullPostings is the indexed append's worst case: an entry
// of search.MaxDocTerms distinct words into a session where each of them
// already holds a full list of postings (every entry the same words), so
// the append rewrites the most postings bytes an append can. Reports
// Redis's own time per append script (INFO commandstats), after a warm-up
// that fills the lists.
func BenchmarkAppendFullPostings(b *testing.B) {
	srv := redisstoretest.NewReal(b)
	c := srv.Client(b)
	ctx := context.Background()
	store := sessions.NewStore(sessionstore.New(srv.Conn(b), sessionstore.Config{TTLSeconds: 604800}))
	words := make([]string, search.MaxDocTerms)
	for i := range words {
		words[i] = "lorem" + strconv.Itoa(i) + "ipsum"
	}
	var f cognee.QAFields
	f.Question, _ = json.Marshal(strings.Join(words, " "))
	f.Answer, _ = json.Marshal("ok")
	n := 0
	appendOne := func() {
		n++
		qa := fmt.Sprintf("q%d", n)
		e, err := cognee.NewQAEntry(f, qa, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := store.Append(ctx, "u", "s", qa, e, search.Eager); err != nil {
			b.Fatal(err)
		}
	}
	for range 600 { // past the cap of every word
		appendOne()
	}
	c.Do(ctx, c.B().ConfigResetstat().Build())
	b.ResetTimer()
	for b.Loop() {
		appendOne()
	}
	b.StopTimer()
	info, _ := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "cmdstat_fcall:"); ok {
			for _, kv := range strings.Split(v, ",") {
				if us, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
					f, _ := strconv.ParseFloat(us, 64)
					b.ReportMetric(f, "redis-µs/append")
				}
			}
		}
	}
}
