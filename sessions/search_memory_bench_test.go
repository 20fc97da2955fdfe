package sessions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
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

// variedText is n words drawn from a vocabulary of 20 000 words by a Zipf
// law (as a conversation's words are): every entry differs, unlike the
// typical entry BenchmarkSearchMemory repeats, so a session's index holds
// about as many distinct words as real conversations give it.
func variedText(z *rand.Zipf, n int) string {
	syllables := []string{"ka", "lo", "mer", "tin", "sa", "ron", "vel", "dus", "pa", "gri", "ne", "stor"}
	words := make([]string, n)
	for i := range words {
		k := z.Uint64()
		var b strings.Builder
		for j := 0; j < 2+int(k%3); j++ {
			b.WriteString(syllables[(k>>(4*j))%uint64(len(syllables))])
		}
		b.WriteString(strconv.FormatUint(k%97, 10))
		words[i] = b.String()
	}
	return strings.Join(words, " ")
}

// BenchmarkSearchMemoryVaried is BenchmarkSearchMemory's searched case
// with entries that all differ (12, 25 and 15 words of question, context
// and answer): the index's bytes against the entries' own, 50 users × 12
// sessions × 10 entries, a fresh redis-server per case.
func BenchmarkSearchMemoryVaried(b *testing.B) {
	const users, perUser, entries = 50, 12, 10
	for _, mode := range []search.Mode{search.Off, search.Eager} {
		b.Run("index="+string(mode), func(b *testing.B) {
			for b.Loop() {
				srv := redisstoretest.NewReal(b)
				c := srv.Client(b)
				ctx := context.Background()
				store := sessions.NewStore(sessionstore.New(srv.Conn(b), sessionstore.Config{TTLSeconds: 604800}))
				r := rand.New(rand.NewPCG(1, 2))
				z := rand.NewZipf(r, 1.1, 2, 20000)
				var entryBytes int64
				for u := range users {
					for s := range perUser {
						for e := range entries {
							var f cognee.QAFields
							f.Question, _ = json.Marshal(variedText(z, 12) + "?")
							f.Context, _ = json.Marshal(variedText(z, 25))
							f.Answer, _ = json.Marshal(variedText(z, 15))
							qa := fmt.Sprintf("q%d-%d-%d", u, s, e)
							entry, err := cognee.NewQAEntry(f, qa, time.Now())
							if err != nil {
								b.Fatal(err)
							}
							entryBytes += int64(len(entry))
							if _, _, err := store.Append(ctx, fmt.Sprintf("u%d", u), fmt.Sprintf("s%d", s), qa, entry, mode); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
				var searchBytes int64
				keys, _ := c.Do(ctx, c.B().Keys().Pattern("agent_search*").Build()).AsStrSlice()
				for _, k := range keys {
					n, _ := c.Do(ctx, c.B().MemoryUsage().Key(k).Samples(0).Build()).AsInt64()
					searchBytes += n
				}
				sessionsN := float64(users * perUser)
				b.ReportMetric(float64(entryBytes)/sessionsN, "entries-B/session")
				b.ReportMetric(float64(searchBytes)/sessionsN, "search-B/session")
				b.ReportMetric(float64(searchBytes)/float64(entryBytes), "search/entries")
			}
		})
	}
}
