package sessions

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// postingsCount is how many postings the user u holds, in every postings
// key.
func postingsCount(t *testing.T, srv *redisstoretest.Server) int64 {
	t.Helper()
	c := srv.Client(t)
	var n int64
	for _, k := range srv.Keys(t, "agent_search:*") {
		m, err := c.Do(t.Context(), c.B().Zcard().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	return n
}

// purgeStep runs one search_purge step of about budget terms: whether
// more is left.
func purgeStep(t *testing.T, s *Store, budget int) bool {
	t.Helper()
	r, err := s.Run(t.Context(), lua.SearchPurge, "u", "-", fmt.Sprint(budget))
	if err != nil {
		t.Fatal(err)
	}
	more, err := r.Flag(0)
	if err != nil {
		t.Fatal(err)
	}
	return more
}

// bigDocs appends n entries of 200 distinct words each to session s of
// user u, indexed (eager).
func bigDocs(t *testing.T, s *Store, session string, n int) {
	t.Helper()
	for i := range n {
		words := make([]string, 200)
		for j := range words {
			words[j] = fmt.Sprintf("w%dx%d", i, j)
		}
		id := fmt.Sprintf("%s-%d", session, i)
		if _, _, err := s.Append(context.Background(), "u", session, id, qaEntry(t, id, strings.Join(words, " ")), search.Eager); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPurgeStepBounded: one search_purge step removes about its budget of
// postings, not a whole HSCAN page of documents of up to 256 terms each
// (16 × 256 = 4 096 ZREMs in one script), and the steps together remove
// every posting of the deleted session.
func TestPurgeStepBounded(t *testing.T) {
	srv := redisstoretest.NewReal(t) // HSCAN's pages as Redis answers them
	s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
	bigDocs(t, s, "gone", 40)
	before := postingsCount(t, srv)
	if _, err := s.Run(t.Context(), lua.SessionDelete, "u", "gone"); err != nil {
		t.Fatal(err)
	}
	steps := 0
	for more := true; more; steps++ {
		if steps > 100 {
			t.Fatal("the purge never ends")
		}
		n0 := postingsCount(t, srv)
		more = purgeStep(t, s, 512)
		if removed := n0 - postingsCount(t, srv); removed > 512+255 {
			t.Fatalf("step %d removed %d postings, budget 512 (of %d)", steps, removed, before)
		}
	}
	if n := postingsCount(t, srv); n != 0 {
		t.Fatalf("%d postings left after %d steps", n, steps)
	}
}

// TestPurgeStepBoundedOldDocuments: documents an older sidecar stored
// without their spec ("ver\tlength\ttime\tdigest\tpreview") have no
// postings the purge can name, yet each costs an HDEL: a step still stops
// at its budget rather than deleting every one of a big session's in one
// script.
func TestPurgeStepBoundedOldDocuments(t *testing.T) {
	srv := redisstoretest.NewReal(t) // HSCAN's pages as Redis answers them
	s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
	bigDocs(t, s, "gone", 1)
	c := srv.Client(t)
	docs := srv.Layout().SearchDocsOf("u", "gone", "entry")
	const old = 3000
	cmd := c.B().Hset().Key(docs).FieldValue()
	for i := range old {
		cmd = cmd.FieldValue(fmt.Sprintf("entry\told-%d", i), fmt.Sprintf("7\t3\t1700000000000000\tabcdef0123456789\tan old preview %d", i))
	}
	if err := c.Do(t.Context(), cmd.Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), lua.SessionDelete, "u", "gone"); err != nil {
		t.Fatal(err)
	}
	purge := srv.Keys(t, "agent_search_purge:*")
	if len(purge) != 1 {
		t.Fatalf("purge keys %v", purge)
	}
	if !purgeStep(t, s, 512) {
		t.Fatal("one step of 512 purged 3 000 documents")
	}
	left, err := c.Do(t.Context(), c.B().Hlen().Key(purge[0]).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	if left < old-512-16 {
		t.Fatalf("one step of 512 took %d documents out", old+1-left)
	}
	for steps := 0; purgeStep(t, s, 512); steps++ {
		if steps > 100 {
			t.Fatal("the purge never ends")
		}
	}
	if ks := srv.Keys(t, "agent_search*"); len(ks) != 1 { // the statistics
		t.Fatalf("left: %v", ks)
	}
}
