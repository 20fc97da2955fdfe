package search

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"golang.org/x/text/unicode/norm"
)

// Limits of the analysis (docs/operations.md).
const (
	// MaxDocTerms bounds the distinct terms one document indexes (the
	// most frequent kept), so one write does bounded index work.
	MaxDocTerms = 256
	// MaxQueryTerms bounds the terms of one query.
	MaxQueryTerms = 8
	// MaxTermBytes drops longer words (hashes, base64) from the index.
	MaxTermBytes = 64
	// PreviewRunes is how much of a document's text the index keeps for
	// snippets.
	PreviewRunes = 600
	// SnippetRunes bounds a snippet.
	SnippetRunes = 200
	// MaxPostings is how many postings of one term a query reads, newest
	// first.
	MaxPostings = 2000
)

// fold lowercases s and drops its accents.
func fold(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// words splits text into its folded words: runs of letters and digits.
func words(text string) []string {
	return strings.FieldsFunc(fold(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// term is a word as indexed: its stem, or "" for a word not indexed (a
// stop word, or too long).
func term(w string) string {
	if len(w) > MaxTermBytes || english.IsStopWord(w) {
		return ""
	}
	return stems.get(w)
}

// StemCacheWords bounds the stem cache: two generations of at most this
// many words (about 1 MiB in all).
const StemCacheWords = 8192

// stems caches the Snowball stems of recent words: the stemmer converts
// its suffix lists on every call (about 1 µs a word), and the words of a
// conversation repeat. Two generations: a word found only in the older one
// moves to the newer; when the newer is full it becomes the older, and the
// older is dropped.
var stems = &stemCache{cur: map[string]string{}}

type stemCache struct {
	mu       sync.Mutex
	cur, old map[string]string
}

func (c *stemCache) get(w string) string {
	c.mu.Lock()
	s, ok := c.cur[w]
	if !ok {
		if s, ok = c.old[w]; ok {
			c.put(w, s)
		}
	}
	c.mu.Unlock()
	if ok {
		return s
	}
	s = english.Stem(w, false)
	// w (and s, when the word is its own stem) is a slice of the text
	// analysed: copies, so the cache does not keep whole texts alive
	w, s = strings.Clone(w), strings.Clone(s)
	c.mu.Lock()
	c.put(w, s)
	c.mu.Unlock()
	return s
}

// put stores w's stem s; c.mu is held.
func (c *stemCache) put(w, s string) {
	if len(c.cur) >= StemCacheWords {
		c.old, c.cur = c.cur, make(map[string]string, StemCacheWords)
	}
	c.cur[w] = s
}

// Doc is a document analysed for the index.
type Doc struct {
	Terms  map[string]int // term -> frequency (at most MaxDocTerms terms)
	Length int            // words indexed
}

// Analyze analyses the texts of one document together.
func Analyze(texts ...string) Doc {
	d := Doc{Terms: map[string]int{}}
	for _, t := range texts {
		for _, w := range words(t) {
			if s := term(w); s != "" {
				d.Terms[s]++
				d.Length++
			}
		}
	}
	if len(d.Terms) > MaxDocTerms {
		type tf struct {
			t string
			n int
		}
		all := make([]tf, 0, len(d.Terms))
		for t, n := range d.Terms {
			all = append(all, tf{t, n})
		}
		sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].t < all[j].t })
		d.Terms = map[string]int{}
		for _, e := range all[:MaxDocTerms] {
			d.Terms[e.t] = e.n
		}
	}
	return d
}

// Spec is d as the index scripts take it: "term tf term tf ...", terms
// sorted.
func (d Doc) Spec() string {
	ts := make([]string, 0, len(d.Terms))
	for t := range d.Terms {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(d.Terms[t]))
	}
	return b.String()
}

// Query returns the distinct terms of a query, in order, at most
// MaxQueryTerms.
func Query(q string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range words(q) {
		if s := term(w); s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
			if len(out) == MaxQueryTerms {
				break
			}
		}
	}
	return out
}

// Collapse is a document's text as snippets are cut from it: its texts
// joined by single spaces, whitespace collapsed.
func Collapse(texts ...string) string {
	return strings.Join(strings.Fields(strings.Join(texts, " ")), " ")
}

// Preview is Collapse cut at PreviewRunes (what the index kept for
// snippets before it kept no text).
func Preview(texts ...string) string {
	s := Collapse(texts...)
	if utf8.RuneCountInString(s) <= PreviewRunes {
		return s
	}
	return string([]rune(s)[:PreviewRunes])
}

// Snippet is at most SnippetRunes of text around the first word whose term
// is one of terms (the start of text when none is found).
func Snippet(text string, terms []string) string {
	want := map[string]bool{}
	for _, t := range terms {
		want[t] = true
	}
	rs := []rune(text)
	at := -1
	start := -1
	for i := 0; i <= len(rs); i++ {
		inWord := i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i]))
		if inWord && start < 0 {
			start = i
		}
		if !inWord && start >= 0 {
			if want[term(fold(string(rs[start:i])))] {
				at = start
				break
			}
			start = -1
		}
	}
	if len(rs) <= SnippetRunes {
		return text
	}
	from := 0
	if at > SnippetRunes/4 {
		from = at - SnippetRunes/4
	}
	if from+SnippetRunes > len(rs) {
		from = len(rs) - SnippetRunes
	}
	return string(rs[from : from+SnippetRunes])
}

// BM25 parameters.
const (
	k1 = 1.2
	b  = 0.75
)

// Score is the BM25 score of one document: for each query term its
// frequency tf in the document and its document frequency df; n documents
// in all, of average length avg; length the document's.
func Score(tfs, dfs []int, n int, length int, avg float64) float64 {
	if avg <= 0 {
		avg = 1
	}
	s := 0.0
	for i, tf := range tfs {
		if tf == 0 {
			continue
		}
		df := float64(dfs[i])
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		f := float64(tf)
		s += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(length)/avg))
	}
	return s
}
