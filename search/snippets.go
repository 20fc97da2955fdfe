package search

import (
	"context"
	"strings"
	"unicode/utf8"
)

// Texts returns the texts each of ids (items of one kind in one session)
// was analysed from, for snippets; an id missing from the map is gone.
type Texts func(ctx context.Context, user, session string, ids []string) (map[string][]string, error)

// RegisterTexts adds a module's fetcher of kind's texts (at New, like
// Register); without one a kind's results have empty snippets.
func (x *Index) RegisterTexts(kind string, t Texts) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.texts == nil {
		x.texts = map[string]Texts{}
	}
	x.texts[kind] = t
}

func (x *Index) textsOf(kind string) Texts {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.texts[kind]
}

// scanned is texts collapsed (Collapse), at most SnippetScanBytes of it,
// cut at a character's start.
func scanned(texts []string) string {
	var b strings.Builder
	for _, t := range texts {
		if b.Len() > 2*SnippetScanBytes {
			break
		}
		b.WriteString(cut(t, 2*SnippetScanBytes))
		b.WriteByte(' ')
	}
	return cut(Collapse(b.String()), SnippetScanBytes)
}

// cut is s's first n bytes at most, cut at a character's start.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// snippetTexts fetches the texts of docs from their kinds' fetchers, one
// call per session and kind: a doc missing from the answer has no fetcher;
// one mapped to nil is gone.
func (x *Index) snippetTexts(ctx context.Context, f *finder, docs []*doc) (map[*doc][]string, error) {
	out := make(map[*doc][]string, len(docs))
	for _, ds := range byHash(docs) {
		fetch := x.textsOf(kinds[ds[0].kind])
		if fetch == nil {
			continue
		}
		ids := make([]string, len(ds))
		for i, d := range ds {
			ids[i] = d.id
		}
		got, err := fetch(ctx, f.user, f.sessions[ds[0].sess], ids)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			t, ok := got[d.id]
			if ok && t == nil {
				t = []string{}
			}
			out[d] = t
		}
	}
	return out, nil
}
