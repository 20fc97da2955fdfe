package sessions

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
)

// The relevance search index of Q&A entries (package search; the scripts'
// side is search/search.lua). The sidecar's own writes keep it in the same
// script as the write (under SEARCH_INDEX=on-demand only while the user
// has an index): an append indexes its entry, a delete or a trim takes
// entries out, a change of question, context or answer takes the entry
// out and indexes it again. Entries another program (Cognee) appended,
// and the entries of a user's sessions before the user's first relevance
// search, are indexed by CatchUp steps, the Step this module registers
// with the host's search.Index (its paced background worker, and a
// search's bounded build). One step is session_search_pending then
// session_search_catchup.

// entryDoc is the search document of a stored entry: its question, context
// and answer analysed as one text.
type entryDoc struct {
	spec   string
	length int
}

// args is the document as the scripts take it: spec, length.
func (d entryDoc) args() []string {
	return []string{d.spec, strconv.Itoa(d.length)}
}

// analyseEntry is the document of stored (Cognee's JSON, NaN and all): an
// element that is not a JSON object, or whose texts are not strings,
// contributes what it has (an empty document when nothing). A flat entry
// (the sidecar's own, and Cognee's before it holds an object) is read
// without a decoder: this runs on every append.
func analyseEntry(stored []byte) entryDoc {
	out := entryTexts(stored)
	d := search.Analyze(out...)
	return entryDoc{spec: d.Spec(), length: d.Length}
}

// jsonString decodes raw when it is a JSON string: a string without
// escapes and of valid UTF-8 as it is, anything else through the decoder
// (which turns invalid UTF-8 into U+FFFD), so equal strings decode equal
// whatever their encoding.
func jsonString(raw json.RawMessage) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		if in := raw[1 : n-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
			return string(in), true
		}
	}
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// textChanged reports whether an update sets the question, context or
// answer (the entry's document changes).
func textChanged(fields [][2]string) bool {
	for _, f := range fields {
		switch f[0] {
		case "question", "context", "answer":
			return true
		}
	}
	return false
}

// reindexTries bounds ReindexEntry's reads of an entry that keeps changing.
const reindexTries = 3

// ReindexEntry writes entry qaID's search document anew after an update
// changed its text: stored is the entry as the update answered it. When
// the session holds other bytes by now (feedback landed in between), it
// reads the entry again and retries, at most reindexTries times; an entry
// gone, or past the index's covered prefix, needs nothing (the catch-up
// that reaches it indexes it).
func (s *Store) ReindexEntry(ctx context.Context, user, session, qaID string, stored []byte) error {
	for range reindexTries {
		sum := sha1.Sum(stored)
		args := append([]string{qaID, hex.EncodeToString(sum[:])}, analyseEntry(stored).args()...)
		r, err := s.exec(ctx, luaScripts.SearchEntry, user, session, args...)
		if err != nil {
			return err
		}
		if got, err := r.Int(0); err != nil || got != 0 {
			return err
		}
		if stored, err = s.Entry(ctx, user, session, qaID); err != nil {
			if errors.Is(err, redisstore.ErrNotFound) {
				return nil
			}
			return err
		}
	}
	return fmt.Errorf("reindex %s: the entry kept changing", qaID)
}

// A catch-up step reads at most StepEntries entries and writes the
// documents of those whose distinct terms add up to at most MaxStepTerms
// (at least one, of at most search.MaxDocTerms): each term costs a PTTL,
// a ZADD and sometimes an EXPIRE, so a step stays well under 5 ms of Redis
// time whatever the entries hold (2 048 terms took 10-30 ms a step on a
// 20 000-entry Cognee session, 256 still logged 1 % of the steps over
// 5 ms there; TestSearchBuildNeverStalls reads SLOWLOG).
const (
	StepEntries  = 64
	MaxStepTerms = 128
)

// CatchUp takes into the search index what it lacks of the session's
// entries (another program appended or rewrote them, or the index is due a
// refresh), at most steps steps. It stops early when nothing is left, and
// when another writer changed the list or the index between a step's read
// and its write (the next touch goes on). Returns whether something is
// left.
func (s *Store) CatchUp(ctx context.Context, user, session string, steps int) (bool, error) {
	for range steps {
		args, err := s.catchupRead(ctx, user, session)
		if err != nil {
			return true, err
		}
		if args == nil {
			return false, nil
		}
		stored, more, err := s.catchupWrite(ctx, user, session, args)
		if err != nil || !stored {
			return true, err // !stored: another writer moved on meanwhile
		}
		if !more {
			return false, nil
		}
	}
	return true, nil
}

// catchupRead is a step's read (session_search_pending) and the analysis
// of what it read: session_search_catchup's arguments, nil when the index
// lacks nothing.
func (s *Store) catchupRead(ctx context.Context, user, session string) ([]string, error) {
	r, err := s.Run(ctx, luaScripts.SearchPending, user, session, strconv.Itoa(StepEntries))
	if err != nil {
		return nil, err
	}
	bad := func(err error) error { return redisstore.Wrap(luaScripts.SearchPending.Name, err) }
	if len(r.Values) < 3 || (len(r.Values)-3)%4 != 0 {
		return nil, bad(fmt.Errorf("unexpected script reply of %d values", len(r.Values)))
	}
	start, err1 := r.Int(0)
	mode, err2 := r.Int(1)
	cov, err3 := r.String(2)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, bad(err)
	}
	read := (len(r.Values) - 3) / 4
	if read == 0 && mode == 0 {
		return nil, nil
	}
	docs, terms, n := make([]string, 0, 5*read), 0, 0
	for ; n < read; n++ {
		id, err1 := r.String(3 + 4*n)
		fp, err2 := r.String(4 + 4*n)
		sum, err3 := r.String(5 + 4*n)
		el, err4 := r.String(6 + 4*n)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, bad(err)
		}
		if el == "" { // indexed already
			docs = append(docs, id, fp, sum, "", "-1")
			continue
		}
		d := analyseEntry([]byte(el))
		k := strings.Count(d.spec, " ")/2 + 1
		if n > 0 && terms+k > MaxStepTerms {
			break
		}
		terms += k
		docs = append(append(docs, id, fp, sum), d.args()...)
	}
	return append([]string{strconv.FormatInt(start, 10), strconv.FormatInt(mode, 10), cov, strconv.Itoa(n)}, docs...), nil
}

// catchupWrite runs session_search_catchup with a read's arguments:
// whether it stored them (false: the list or the index changed since the
// read) and whether more is left.
func (s *Store) catchupWrite(ctx context.Context, user, session string, args []string) (stored, more bool, err error) {
	r, err := s.Run(ctx, luaScripts.SearchCatchup, user, session, args...)
	if err != nil {
		return false, false, err
	}
	indexSteps.WithLabelValues("search").Inc()
	if stored, err = r.Flag(0); err != nil || !stored {
		return false, false, redisstore.Wrap(luaScripts.SearchCatchup.Name, err)
	}
	if more, err = r.Flag(1); err != nil {
		return false, false, redisstore.Wrap(luaScripts.SearchCatchup.Name, err)
	}
	return true, more, nil
}
