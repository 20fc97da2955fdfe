package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// TestMain shares one Redis Cluster among the package's cluster subtests
// (flushed before each) and stops it at the end.
func TestMain(m *testing.M) { os.Exit(redisstoretest.Main(m)) }

// fdoc is one document as the write scripts store it.
type fdoc struct {
	session, kind string
	num           int
	at            int64 // µs
	id            string
	terms         map[string]int // term -> tf; its length is their sum
}

// t0 is the tests' epoch of document times (µs).
const t0 = int64(1_790_000_000_000_000)

// fixture is one user's index written by hand in the storage format.
type fixture struct {
	c rueidis.Client
	l redisstore.Layout
	x *Index
}

func newFixture(t testing.TB, srv *redisstoretest.Server) *fixture {
	t.Helper()
	store := sessionstore.New(srv.Conn(t), sessionstore.Config{TTLSeconds: 600})
	return &fixture{c: srv.Client(t), l: srv.Layout(), x: &Index{store: store}}
}

func (f *fixture) do(t testing.TB, cmd rueidis.Completed) rueidis.RedisResult {
	t.Helper()
	r := f.c.Do(t.Context(), cmd)
	if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Fatal(err)
	}
	return r
}

// write stores docs (each hash's " n", " len", records, ids and postings)
// and lists sessions in the user's zset with their scores.
func (f *fixture) write(t testing.TB, user string, sessions map[string]int64, docs ...fdoc) {
	t.Helper()
	for _, cmd := range f.commands(user, sessions, docs...) {
		f.do(t, cmd)
	}
}

// commands are write's commands.
func (f *fixture) commands(user string, sessions map[string]int64, docs ...fdoc) []rueidis.Completed {
	var cmds []rueidis.Completed
	type hash struct{ session, kind string }
	type posting struct{ num, tf int }
	fields := map[hash][]string{}
	postings := map[hash]map[string][]posting{}
	n, sum := map[hash]int{}, map[hash]int{}
	for _, d := range docs {
		h := hash{d.session, d.kind}
		if postings[h] == nil {
			postings[h] = map[string][]posting{}
		}
		length := 0
		var terms []string
		for term, tf := range d.terms {
			length += tf
			terms = append(terms, term)
			postings[h][term] = append(postings[h][term], posting{d.num, tf})
		}
		sort.Strings(terms)
		num := strconv.Itoa(d.num)
		fields[h] = append(fields[h], "#"+num, fmt.Sprintf("%d\t%d\t%s\t%s", length, d.at, strings.Join(terms, " "), d.id), "="+d.id, num)
		n[h]++
		sum[h] += length
	}
	for h, fs := range fields {
		fs = append(fs, " n", strconv.Itoa(n[h]), " len", strconv.Itoa(sum[h]), " seq", "99999")
		for term, ps := range postings[h] {
			sort.Slice(ps, func(i, j int) bool { return ps[i].num < ps[j].num })
			var b strings.Builder
			b.WriteByte(' ')
			for _, p := range ps {
				b.WriteString(strconv.Itoa(p.num))
				if p.tf != 1 {
					b.WriteString(":" + strconv.Itoa(p.tf))
				}
				b.WriteByte(' ')
			}
			fs = append(fs, term, b.String())
		}
		cmd := f.c.B().Hset().Key(f.l.SearchDocsOf(user, h.session, h.kind)).FieldValue()
		for i := 0; i < len(fs); i += 2 {
			cmd = cmd.FieldValue(fs[i], fs[i+1])
		}
		cmds = append(cmds, cmd.Build())
	}
	if len(sessions) > 0 {
		cmd := f.c.B().Zadd().Key(f.l.SearchSessions(user)).ScoreMember()
		for s, score := range sessions {
			cmd = cmd.ScoreMember(float64(score), s)
		}
		cmds = append(cmds, cmd.Build())
	}
	return cmds
}

func (f *fixture) find(t *testing.T, user, session, q string, limit int) []Result {
	t.Helper()
	res, err := f.x.Find(t.Context(), user, session, q, limit)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (f *fixture) listed(t *testing.T, user string) []string {
	t.Helper()
	ss, err := f.do(t, f.c.B().Zrange().Key(f.l.SearchSessions(user)).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(ss)
	return ss
}

func ids(res []Result) string {
	var out []string
	for _, r := range res {
		out = append(out, r.SessionID+"/"+r.Kind+"/"+r.ID)
	}
	return strings.Join(out, ",")
}

func round4(f float64) float64 { return float64(int64(f*10000+0.5)) / 10000 }

func micros(at int64) string { return time.UnixMicro(at).UTC().Format(time.RFC3339Nano) }

// Find ranks by BM25 over the hashes read (N, the average length and df
// from them), best first, ties newest first, with each document's time.
func TestFindRanksByBM25(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		f := newFixture(t, srv)
		f.write(t, "u", map[string]int64{"s": t0},
			fdoc{"s", "entry", 1, t0 + 1, "e1", map[string]int{"deploy": 2, "cat": 1}},
			fdoc{"s", "entry", 2, t0 + 2, "e2", map[string]int{"deploy": 1, "dog": 3}},
			fdoc{"s", "entry", 3, t0 + 3, "e3", map[string]int{"cat": 1}},
			fdoc{"s", "message", 1, t0 + 4, "m1", map[string]int{"deploy": 1}},
			fdoc{"s", "message", 2, t0 + 5, "m2\twith\ttabs", map[string]int{"deploy": 1}},
		)
		// N 5, lengths 3+4+1+1+1 = 10, df(deploy) 4
		n, avg := 5, 2.0
		want := []Result{
			{SessionID: "s", Kind: "message", ID: "m2\twith\ttabs", Score: round4(Score([]int{1}, []int{4}, n, 1, avg)), Time: micros(t0 + 5)},
			{SessionID: "s", Kind: "message", ID: "m1", Score: round4(Score([]int{1}, []int{4}, n, 1, avg)), Time: micros(t0 + 4)},
			{SessionID: "s", Kind: "entry", ID: "e1", Score: round4(Score([]int{2}, []int{4}, n, 3, avg)), Time: micros(t0 + 1)},
			{SessionID: "s", Kind: "entry", ID: "e2", Score: round4(Score([]int{1}, []int{4}, n, 4, avg)), Time: micros(t0 + 2)},
		}
		if !(want[1].Score > want[2].Score && want[2].Score > want[3].Score) {
			t.Fatalf("the fixture does not rank as meant: %+v", want)
		}
		for _, session := range []string{"", "s"} {
			if got := f.find(t, "u", session, "deploying", 10); !slices.Equal(got, want) {
				t.Fatalf("session %q:\n got %+v\nwant %+v", session, got, want)
			}
		}
		if got := f.find(t, "u", "", "deploying", 2); !slices.Equal(got, want[:2]) {
			t.Fatalf("limit 2: %+v", got)
		}
		// two terms: a document found by both adds their scores; a short
		// one with the rarer term alone comes first
		got := f.find(t, "u", "", "cats deployed", 10)
		e3, e1 := round4(Score([]int{0, 1}, []int{4, 2}, n, 1, avg)), round4(Score([]int{2, 1}, []int{4, 2}, n, 3, avg))
		if len(got) != 5 || got[0].ID != "e3" || got[0].Score != e3 || got[1].ID != "e1" || got[1].Score != e1 {
			t.Fatalf("two terms: %+v, want e3 (%v) then e1 (%v)", got, e3, e1)
		}
		if _, err := f.x.Find(t.Context(), "u", "", "the and of", 10); !errors.Is(err, ErrNoTerms) {
			t.Fatalf("stop words only: %v, want ErrNoTerms", err)
		}
		if got := f.find(t, "nobody", "", "deploy", 10); len(got) != 0 {
			t.Fatalf("a user without an index: %+v", got)
		}
	})
}

// Each term takes at most MaxPostings postings in all, newest first: the
// newest session's newest documents, then the next session's; the
// documents past them are not found, however well they would score, and
// sessions past them are not read.
func TestFindReadsMaxPostingsNewestFirst(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		f := newFixture(t, srv)
		var docs []fdoc
		// the newest session: 1 500 documents of "common", each 4 words long
		for i := 1; i <= 1500; i++ {
			docs = append(docs, fdoc{"new", "entry", i, t0 + int64(i), "n" + strconv.Itoa(i), map[string]int{"common": 1, "pad": 3}})
		}
		// the older: 1 000, of which only the newest 500 fit; its oldest
		// document is the shortest (it would score best)
		docs = append(docs, fdoc{"old", "message", 1, t0 - 10_000, "short", map[string]int{"common": 1}})
		for i := 2; i <= 1000; i++ {
			docs = append(docs, fdoc{"old", "message", i, t0 - 10_000 + int64(i), "o" + strconv.Itoa(i), map[string]int{"common": 1, "pad": 3}})
		}
		// the newest of the older session's 500 is a little shorter
		docs[len(docs)-1].terms = map[string]int{"common": 1, "pad": 2}
		listed := map[string]int64{"new": 1000, "old": 999}
		for i := range 100 { // expired sessions, older
			listed["x"+strconv.Itoa(i)] = int64(i)
		}
		f.write(t, "u", listed, docs...)
		got := f.find(t, "u", "", "common", 3)
		if ids(got) != "old/message/o1000,new/entry/n1500,new/entry/n1499" {
			t.Fatalf("got %s", ids(got))
		}
		// df counts every posting of the hashes read: 2 500 of 2 500
		if want := round4(Score([]int{1}, []int{2500}, 2500, 4, float64(1500*4+999*4)/2500)); got[1].Score != want {
			t.Fatalf("score %v, want %v", got[1].Score, want)
		}
		for _, r := range f.find(t, "u", "", "common", 100) {
			if r.SessionID == "old" && r.ID != "o1000" {
				if n, _ := strconv.Atoi(r.ID[1:]); n <= 500 {
					t.Fatalf("found %s, older than the newest %d postings", r.ID, MaxPostings)
				}
			}
		}
		// most expired sessions were not read: every term had its postings
		if l := f.listed(t, "u"); len(l) < 90 {
			t.Fatalf("listed %d: sessions past the postings needed were read", len(l))
		}
		// a term short of postings reads on, to the end of the list
		if got := f.find(t, "u", "", "common rare", 1); len(got) != 1 {
			t.Fatalf("got %+v", got)
		}
		if l := f.listed(t, "u"); !slices.Equal(l, []string{"new", "old"}) {
			t.Fatalf("listed %.40q, want the expired sessions dropped", l)
		}
	})
}

// A user-wide search drops listed sessions whose hashes are both gone
// (expired), keeps one whose hash holds no term of the query, and reads
// at most MaxSearchSessions of them, newest first; a search of one
// session drops nothing.
func TestFindDropsExpiredSessions(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		f := newFixture(t, srv)
		f.write(t, "u", map[string]int64{"live": 5, "gone1": 4, "quiet": 3, "gone2": 2},
			fdoc{"live", "entry", 1, t0, "e1", map[string]int{"zebra": 1}},
			fdoc{"quiet", "message", 1, t0, "m1", map[string]int{"lion": 1}})
		f.do(t, f.c.B().Hdel().Key(f.l.SearchDocs("u", "quiet")).Field(" n", " len").Build())
		if got := f.find(t, "u", "gone1", "zebra", 10); len(got) != 0 {
			t.Fatalf("got %+v", got)
		}
		if l := f.listed(t, "u"); len(l) != 4 {
			t.Fatalf("a one-session search changed the list: %q", l)
		}
		if got := f.find(t, "u", "", "zebra", 10); ids(got) != "live/entry/e1" {
			t.Fatalf("got %s", ids(got))
		}
		if l := f.listed(t, "u"); !slices.Equal(l, []string{"live", "quiet"}) {
			t.Fatalf("listed %q, want live and quiet", l)
		}

		// MaxSearchSessions + 1 expired sessions: the oldest is not read
		cmd := f.c.B().Zadd().Key(f.l.SearchSessions("v")).ScoreMember()
		for i := range MaxSearchSessions + 1 {
			cmd = cmd.ScoreMember(float64(i+1), "x"+strconv.Itoa(i))
		}
		f.do(t, cmd.Build())
		f.find(t, "v", "", "zebra", 10)
		if l := f.listed(t, "v"); !slices.Equal(l, []string{"x0"}) {
			t.Fatalf("listed %d sessions (%.40q), want only the oldest, x0", len(l), l)
		}
	})
}

// A user-wide search drops the listed sessions whose hashes are gone. A
// write indexing one of them between the search's EXISTS and its ZREM
// (its ZADD of the session then undone by the ZREM) kept its documents
// out of every user-wide search until its next indexing write: the
// session is listed again now.
func TestFindListsAgainASessionIndexedDuringItsDrop(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		f := newFixture(t, srv)
		f.write(t, "u", map[string]int64{"live": 5, "back": 4, "gone": 3},
			fdoc{"live", "entry", 1, t0, "e1", map[string]int{"zebra": 1}})
		dropHook = func() {
			// the write: its document and its ZADD, at once
			for _, cmd := range f.commands("u", map[string]int64{"back": 6},
				fdoc{"back", "message", 1, t0 + 1, "m1", map[string]int{"zebra": 1}}) {
				f.do(t, cmd)
			}
		}
		t.Cleanup(func() { dropHook = nil })
		f.find(t, "u", "", "zebra", 10)
		dropHook = nil
		if l := f.listed(t, "u"); !slices.Equal(l, []string{"back", "live"}) {
			t.Fatalf("listed %q, want back and live", l)
		}
		if got := f.find(t, "u", "", "zebra", 10); ids(got) != "back/message/m1,live/entry/e1" {
			t.Fatalf("got %s", ids(got))
		}
	})
}

// A candidate whose record is missing, or whose record lacks a term it
// was found by (its hash made anew between the reads), is skipped.
func TestFindSkipsMissingAndChangedRecords(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		f := newFixture(t, srv)
		f.write(t, "u", map[string]int64{"s": 1},
			fdoc{"s", "entry", 1, t0 + 1, "e1", map[string]int{"zebra": 1}},
			fdoc{"s", "entry", 2, t0 + 2, "e2", map[string]int{"zebra": 1}},
			fdoc{"s", "entry", 3, t0 + 3, "e3", map[string]int{"zebra": 1}},
			fdoc{"s", "entry", 4, t0 + 4, "e4", map[string]int{"zebra": 1, "lion": 1}})
		key := f.l.SearchEntryDocs("u", "s")
		f.do(t, f.c.B().Hdel().Key(key).Field("#2").Build())
		f.do(t, f.c.B().Hset().Key(key).FieldValue().FieldValue("#3", fmt.Sprintf("1\t%d\tlion\tother", t0)).Build())
		f.do(t, f.c.B().Hset().Key(key).FieldValue().FieldValue("#1", "not a record").Build())
		if got := f.find(t, "u", "", "zebra", 10); ids(got) != "s/entry/e4" {
			t.Fatalf("got %s, want only e4", ids(got))
		}
		if got := f.find(t, "u", "s", "lion", 10); ids(got) != "s/entry/e4" {
			t.Fatalf("lion: got %s, want only e4 (#3 is not in lion's postings)", ids(got))
		}
	})
}

// Snippets come from the kind's registered fetcher (texts collapsed, cut
// around the first match); a kind without one has empty snippets; an item
// the fetcher reports gone is dropped and the next best takes its place,
// over more than one fetch when many are gone.
func TestFindSnippets(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		f := newFixture(t, srv)
		var docs []fdoc
		for i := 1; i <= 12; i++ {
			// e12 the best (shortest), e1 the worst
			docs = append(docs, fdoc{"s", "entry", i, t0 + int64(i), "e" + strconv.Itoa(i), map[string]int{"deploy": 1, "pad": 13 - i}})
		}
		docs = append(docs, fdoc{"s", "message", 1, t0, "m1", map[string]int{"deploy": 1, "pad": 30}})
		f.write(t, "u", map[string]int64{"s": 1}, docs...)
		long := strings.Repeat("filler ", 60) + "the   deployment\n\tfailed " + strings.Repeat("more ", 60)
		var gone map[string]bool
		var calls [][]string
		f.x.RegisterTexts("entry", func(_ context.Context, user, session string, ids []string) (map[string][]string, error) {
			if user != "u" || session != "s" {
				t.Errorf("fetch of %s/%s", user, session)
			}
			calls = append(calls, ids)
			out := map[string][]string{}
			for _, id := range ids {
				if !gone[id] {
					out[id] = []string{"About " + id + ":", long}
				}
			}
			return out, nil
		})
		gone = map[string]bool{"e12": true}
		got := f.find(t, "u", "", "deploy", 2)
		if ids(got) != "s/entry/e11,s/entry/e10" {
			t.Fatalf("got %s", ids(got))
		}
		want := Snippet(Collapse("About e11:", long), []string{"deploy"})
		if got[0].Snippet != want || !strings.Contains(want, "the deployment failed") {
			t.Fatalf("snippet %q, want %q", got[0].Snippet, want)
		}
		if len(calls) != 1 || len(calls[0]) > 2+4 {
			t.Fatalf("fetches %q: want one of a few more than the limit", calls)
		}

		// most of them gone: filled up over more fetches
		gone, calls = map[string]bool{}, nil
		for i := 4; i <= 12; i++ {
			gone["e"+strconv.Itoa(i)] = true
		}
		if got := f.find(t, "u", "", "deploy", 3); ids(got) != "s/entry/e3,s/entry/e2,s/entry/e1" {
			t.Fatalf("got %s (fetches %q)", ids(got), calls)
		}
		if len(calls) < 2 {
			t.Fatalf("fetches %q: want more than one", calls)
		}

		// messages have no fetcher here: empty snippets, never dropped
		gone = map[string]bool{}
		got = f.find(t, "u", "", "deploy", 13)
		if len(got) != 13 || got[12].ID != "m1" || got[12].Snippet != "" || got[0].Snippet == "" {
			t.Fatalf("got %+v", got)
		}

		// a fetcher's error is the search's
		f.x.RegisterTexts("entry", func(context.Context, string, string, []string) (map[string][]string, error) {
			return nil, redisstore.ErrNotFound
		})
		if _, err := f.x.Find(t.Context(), "u", "", "deploy", 2); !errors.Is(err, redisstore.ErrNotFound) {
			t.Fatalf("err %v", err)
		}
	})
}

// newest takes the last postings first and counts every well-formed one.
func TestNewestPostings(t *testing.T) {
	for _, c := range []struct {
		v     string
		max   int
		want  string
		count int
	}{
		{" 1 5:2 9 ", 10, "9:1 5:2 1:1", 3},
		{" 1 5:2 9 ", 2, "9:1 5:2", 3},
		{" 1 5:2 9 ", 0, "", 3},
		{" 12 ", 1, "12:1", 1},
		{"", 5, "", 0},
		{"   ", 5, "", 0},
		{" 1 x 0 3:0 4: :2 7:a 8 ", 10, "8:1 1:1", 2},
		{"3 4", 10, "4:1 3:1", 2},
	} {
		var got []string
		n := newest(c.v, c.max, func(num string, tf int) { got = append(got, num+":"+strconv.Itoa(tf)) })
		if strings.Join(got, " ") != c.want || n != c.count {
			t.Errorf("newest(%q, %d) = %q, %d; want %q, %d", c.v, c.max, strings.Join(got, " "), n, c.want, c.count)
		}
	}
}

// A record parses into its length, time and id (the id may hold tabs);
// anything else is not a record.
func TestRecord(t *testing.T) {
	f := &finder{terms: []string{"deploy", "cat"}}
	d := &doc{tfs: []int{1, 0}}
	if !f.record(d, "3\t17\tcat deploy\tid\twith tab") || d.length != 3 || d.at != 17 || d.id != "id\twith tab" {
		t.Fatalf("record: %+v", d)
	}
	for _, rec := range []string{"3\t17\tcat\tid", "3\t17\tdeploy", "x\t17\tdeploy\tid", "3\tx\tdeploy\tid", "-1\t17\tdeploy\tid", "3\t17\tdeployment\tid"} {
		if f.record(&doc{tfs: []int{1, 0}}, rec) {
			t.Errorf("record(%q) accepted", rec)
		}
	}
}

// A snippet looks for its match in the first SnippetScanBytes of the
// collapsed text, cut at a character's start.
func TestScanned(t *testing.T) {
	long := strings.Repeat("é ", SnippetScanBytes) // 3 bytes a pair
	got := scanned([]string{"  a\n\tb ", long, "never reached"})
	if len(got) > SnippetScanBytes || !utf8.ValidString(got) || !strings.HasPrefix(got, "a b é é") || strings.Contains(got, "never") {
		t.Fatalf("scanned: %d bytes, %q...", len(got), got[:min(len(got), 20)])
	}
	if got := scanned([]string{"short", " text "}); got != "short text" {
		t.Fatalf("scanned: %q", got)
	}
	if got := cut("aé", 2); got != "a" {
		t.Fatalf("cut: %q", got)
	}
}
