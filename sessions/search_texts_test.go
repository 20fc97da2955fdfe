package sessions

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// FindForTest runs the host's relevance search over srv as the module
// does (the entries' texts fetcher registered): for the tests of this
// package and of sessions_test.
func FindForTest(t testing.TB, srv *redisstoretest.Server, user, session, q string, limit int) ([]search.Result, error) {
	t.Helper()
	s := sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600})
	x, err := search.FromDeps(sidecar.Deps{Logger: slog.New(slog.DiscardHandler)}, s, search.Off)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Close(context.Background()) })
	x.RegisterTexts("entry", NewStore(s).searchTexts)
	return x.Find(t.Context(), user, session, q, limit)
}

// The entries' fetcher answers each entry's question, context and answer
// as the document was analysed from, and leaves out an entry or a session
// that is gone.
func TestEntryTextsFetcher(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		s := NewStore(sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600}))
		appendAll(t, s, "zebra crossing", "lion den")
		if err := s.DeleteEntry(t.Context(), "u", "s", "s1"); err != nil {
			t.Fatal(err)
		}
		got, err := s.searchTexts(t.Context(), "u", "s", []string{"s0", "s1", "nope"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !slices.Equal(got["s0"], []string{"zebra crossing", "ok"}) {
			t.Fatalf("texts %q, want only s0: [zebra crossing ok]", got)
		}
		if got, want := got["s0"], entryTexts(qaEntry(t, "s0", "zebra crossing")); !slices.Equal(got, want) {
			t.Fatalf("texts %q, want entryTexts's %q", got, want)
		}
		got, err = s.searchTexts(t.Context(), "u", "gone", []string{"s0"})
		if err != nil || len(got) != 0 {
			t.Fatalf("a session gone: %q, %v; want nothing", got, err)
		}
	})
}
