// Package sessions is the sessions module (docs/sessions.md): Q&A entries with
// feedback, agent traces and session context, stored exactly as Cognee's
// Redis adapter stores them, every write one atomic Lua script.
package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "sessions", New: New}

// Limits on query parameters.
const (
	DefaultLastN = 10
	MaxLastN     = 1000
	MaxSearch    = 100
)

// Module serves the session routes.
type Module struct {
	store     *Store
	logger    *slog.Logger
	now       func() time.Time
	maxAnswer int           // SIDECAR_MAX_ANSWER_BYTES
	index     *search.Index // SEARCH_INDEX, catch-ups after writes
	reads     chan struct{} // ConcurrentReads slots
}

// New builds the module over the host's shared session store.
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	s, err := sessionstore.FromDeps(deps)
	if err != nil {
		return nil, err
	}
	x, err := search.FromDeps(deps, s, search.Mode(deps.Limits.SearchIndex))
	if err != nil {
		return nil, err
	}
	store := NewStore(s)
	x.OnDrop = indexerDropped.Inc
	x.Register(func(ctx context.Context, user, session string) (bool, error) {
		return store.CatchUp(ctx, user, session, 1)
	})
	x.RegisterTexts("entry", store.searchTexts)
	return &Module{store: store, logger: deps.Logger, now: time.Now, maxAnswer: deps.Limits.MaxAnswerBytes,
		index: x, reads: make(chan struct{}, ConcurrentReads)}, nil
}

// Close implements sidecar.Closer: stops the background indexer.
func (m *Module) Close(ctx context.Context) error { return m.index.Close(ctx) }

// Name implements sidecar.Module.
func (m *Module) Name() string { return "sessions" }

const base = "/v1/users/{user_id}/sessions/{session_id}"

// Routes implements sidecar.Module.
func (m *Module) Routes() []sidecar.Route {
	return []sidecar.Route{
		{Pattern: "POST " + base + "/entries", Handler: m.appendEntry},
		{Pattern: "GET " + base + "/entries", Handler: m.listLast(func(k redisstore.SessionKeys) string { return k.Entries }), Query: []string{"last_n"}},
		{Pattern: "GET " + base + "/entries/{qa_id}", Handler: m.getEntry},
		{Pattern: "PATCH " + base + "/entries/{qa_id}", Handler: m.patchEntry},
		{Pattern: "DELETE " + base + "/entries/{qa_id}", Handler: m.deleteEntry},
		{Pattern: "PUT " + base + "/entries/{qa_id}/feedback", Handler: m.setFeedback},
		{Pattern: "DELETE " + base + "/entries/{qa_id}/feedback", Handler: m.clearFeedback},
		{Pattern: "GET " + base + "/search", Handler: m.search, Query: []string{"q", "limit", "rank"}},
		{Pattern: "DELETE " + base, Handler: m.deleteSession},
		{Pattern: "POST " + base + "/traces", Handler: m.appendTrace},
		{Pattern: "GET " + base + "/traces", Handler: m.listLast(func(k redisstore.SessionKeys) string { return k.Traces }), Query: []string{"last_n"}},
		{Pattern: "POST " + base + "/context", Handler: m.appendContext},
		{Pattern: "GET " + base + "/context", Handler: m.listContext},
		{Pattern: "PATCH " + base + "/context/{id}", Handler: m.patchContext},
		{Pattern: "DELETE " + base + "/context/{id}", Handler: m.deleteContext},
	}
}

// fieldError turns a Cognee validation error into a 400.
func fieldError(err error) error {
	var fe *cognee.FieldError
	if errors.As(err, &fe) {
		if fe.Field == "" {
			return sidecar.BadRequest("invalid_field", "%s", strings.TrimPrefix(fe.Problem, " "))
		}
		return sidecar.BadRequest("invalid_field", "%s", fe.Error())
	}
	return err
}

// writeStored answers with one stored JSON value, made strict for clients.
func writeStored(w http.ResponseWriter, status int, stored []byte) error {
	body, err := cognee.Strict(stored)
	if err != nil {
		return err
	}
	sidecar.WriteBody(w, status, body)
	return nil
}

// writeOwn answers with JSON the sidecar encoded itself (strict already).
func writeOwn(w http.ResponseWriter, status int, body []byte) { sidecar.WriteBody(w, status, body) }

// writeStoredList answers with stored JSON values as one array.
func (m *Module) writeStoredList(w http.ResponseWriter, elems []string) {
	body, skipped := cognee.AppendStrictArray(make([]byte, 0, 64+len(elems)*256), elems)
	if skipped > 0 {
		m.logger.Warn("skipped stored values that are not JSON", "count", skipped)
	}
	sidecar.WriteBody(w, http.StatusOK, body)
}

// appendRequest is an entry as posted: Cognee's fields plus an optional
// qa_id (the sidecar makes one when absent).
type appendRequest struct {
	QAID *string `json:"qa_id"`
	cognee.QAFields
}

func (m *Module) appendEntry(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id")
	if err != nil {
		return err
	}
	var req appendRequest
	if err := decodeBody(r, &req, req.quick); err != nil {
		return err
	}
	qaID := cognee.NewID()
	if req.QAID != nil {
		if !sidecar.ValidID(*req.QAID) {
			return sidecar.BadRequest("invalid_field", "field \"qa_id\" must be 1-%d characters of A-Z a-z 0-9 _ . @ -", sidecar.MaxIDLength)
		}
		qaID = *req.QAID
	}
	entry, err := cognee.NewQAEntry(req.QAFields, qaID, m.now())
	if err != nil {
		return fieldError(err)
	}
	mode := m.index.WriteMode(p[0])
	st, pending, err := m.store.Append(r.Context(), p[0], p[1], qaID, entry, mode)
	if err != nil {
		return err
	}
	if pending {
		if mode == search.Probe {
			m.index.Known(p[0]) // the user has an index: later appends send their documents
		}
		m.index.Touch(p[0], p[1])
	}
	if !st.Created { // a retried append: the stored entry, nothing written
		return writeStored(w, http.StatusOK, st.Value)
	}
	writeOwn(w, http.StatusCreated, st.Value)
	return nil
}

// listLast answers the newest last_n elements (default 10) of one of the
// session's lists (list picks it), oldest first, within the answer's byte
// cap; [] for an unknown session.
func (m *Module) listLast(list func(redisstore.SessionKeys) string) sidecar.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := sidecar.PathIDs(r, "user_id", "session_id")
		if err != nil {
			return err
		}
		n, err := sidecar.QueryInt(r, "last_n", DefaultLastN, 1, MaxLastN)
		if err != nil {
			return err
		}
		key := list(m.store.Keys(p[0], p[1]))
		return m.pageOf(w, r, func(ctx context.Context, maxBytes int) (page, error) {
			return m.store.readLast(ctx, key, n, maxBytes)
		})
	}
}

func (m *Module) getEntry(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id", "qa_id")
	if err != nil {
		return err
	}
	entry, err := m.store.Entry(r.Context(), p[0], p[1], p[2])
	if err != nil {
		return err
	}
	return writeStored(w, http.StatusOK, entry)
}

func (m *Module) patchEntry(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id", "qa_id")
	if err != nil {
		return err
	}
	var req cognee.QAFields
	if err := sidecar.DecodeJSON(r, &req); err != nil {
		return err
	}
	fields, memify, err := cognee.QAUpdate(req)
	if err != nil {
		return fieldError(err)
	}
	return m.update(w, r, p, fields, memify)
}

func (m *Module) update(w http.ResponseWriter, r *http.Request, p []string, fields []cognee.Field, memify []byte) error {
	pairs := make([][2]string, len(fields))
	for i, f := range fields {
		pairs[i] = [2]string{f.Name, string(f.Value)}
	}
	entry, err := m.store.UpdateEntry(r.Context(), p[0], p[1], p[2], pairs, memify)
	if err != nil {
		return err
	}
	if m.index.Mode() != search.Off {
		if textChanged(pairs) {
			// the update took the entry out of the search index: put it
			// back before answering, even when the caller has gone (should
			// this fail, the entry is not found until its text changes
			// again)
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), search.JobTimeout)
			err := m.store.ReindexEntry(ctx, p[0], p[1], p[2], entry)
			cancel()
			if err != nil {
				m.logger.Warn("search index: entry not indexed again yet", "user_id", p[0], "session_id", p[1], "qa_id", p[2], "err", err)
			}
		}
	}
	return writeStored(w, http.StatusOK, entry)
}

type feedbackRequest struct {
	FeedbackText  json.RawMessage `json:"feedback_text"`
	FeedbackScore json.RawMessage `json:"feedback_score"`
}

func (m *Module) setFeedback(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id", "qa_id")
	if err != nil {
		return err
	}
	var req feedbackRequest
	if err := decodeBody(r, &req, req.quick); err != nil {
		return err
	}
	fields, err := cognee.FeedbackUpdate(req.FeedbackText, req.FeedbackScore)
	if err != nil {
		return fieldError(err)
	}
	return m.update(w, r, p, fields, nil)
}

func (m *Module) clearFeedback(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id", "qa_id")
	if err != nil {
		return err
	}
	return m.update(w, r, p, cognee.ClearFeedback(), nil)
}

func (m *Module) deleteEntry(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id", "qa_id")
	if err != nil {
		return err
	}
	if err := m.store.DeleteEntry(r.Context(), p[0], p[1], p[2]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (m *Module) deleteSession(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id")
	if err != nil {
		return err
	}
	if err := m.store.Delete(r.Context(), p[0], p[1]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// search matches every word of q (case-insensitive) against each entry's
// question, answer and context; newest first, examining at most
// SearchMaxExamined entries (the newest).
func (m *Module) search(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id")
	if err != nil {
		return err
	}
	switch r.URL.Query().Get("rank") {
	case "", "recent":
	case "relevance":
		return m.searchRelevance(w, r, p[0], p[1])
	default:
		return sidecar.BadRequest("invalid_query", "rank must be recent or relevance")
	}
	words := strings.FieldsFunc(strings.ToLower(r.URL.Query().Get("q")), func(c rune) bool {
		return !unicode.IsLetter(c) && !unicode.IsNumber(c)
	})
	if len(words) == 0 {
		return sidecar.BadRequest("invalid_query", "q must hold at least one word")
	}
	limit, err := sidecar.QueryInt(r, "limit", DefaultLastN, 1, MaxSearch)
	if err != nil {
		return err
	}
	key := m.store.Keys(p[0], p[1]).Entries
	return m.pageOf(w, r, func(ctx context.Context, maxBytes int) (page, error) {
		hits, _, err := m.store.searchNewest(ctx, key, limit, maxBytes, func(e string) bool { return matches(e, words) })
		return hits, err
	})
}

func matches(stored string, words []string) bool {
	strict, err := cognee.Strict([]byte(stored))
	if err != nil {
		return false
	}
	var e struct {
		Question string `json:"question"`
		Answer   string `json:"answer"`
		Context  string `json:"context"`
	}
	if json.Unmarshal(strict, &e) != nil {
		return false
	}
	text := strings.ToLower(e.Question + "\n" + e.Answer + "\n" + e.Context)
	return !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(text, w) })
}

func (m *Module) appendTrace(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id")
	if err != nil {
		return err
	}
	var req cognee.TraceFields
	if err := sidecar.DecodeJSON(r, &req); err != nil {
		return err
	}
	trace, err := cognee.NewTrace(req, cognee.NewID())
	if err != nil {
		return fieldError(err)
	}
	if err := m.store.AppendTrace(r.Context(), p[0], p[1], trace); err != nil {
		return err
	}
	return writeStored(w, http.StatusCreated, trace) // a number too large for a float is stored as Infinity, as Cognee does
}

func (m *Module) appendContext(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id")
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := sidecar.DecodeJSON(r, &raw); err != nil {
		return err
	}
	entry, id, err := cognee.NewContextEntry(raw, cognee.NewID())
	if err != nil {
		return fieldError(err)
	}
	if !sidecar.ValidID(id) {
		return sidecar.BadRequest("invalid_field", "field \"id\" must be 1-%d characters of A-Z a-z 0-9 _ . @ -", sidecar.MaxIDLength)
	}
	st, err := m.store.AppendContext(r.Context(), p[0], p[1], id, entry)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !st.Created {
		status = http.StatusOK
	}
	return writeStored(w, status, st.Value)
}

func (m *Module) listContext(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id")
	if err != nil {
		return err
	}
	key := m.store.Keys(p[0], p[1]).Context
	return m.pageOf(w, r, func(ctx context.Context, maxBytes int) (page, error) {
		return m.store.readAll(ctx, key, maxBytes)
	})
}

func (m *Module) patchContext(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id", "id")
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := sidecar.DecodeJSON(r, &raw); err != nil {
		return err
	}
	patch, err := cognee.ContextPatch(raw)
	if err != nil {
		return fieldError(err)
	}
	entry, err := m.store.UpdateContext(r.Context(), p[0], p[1], p[2], patch)
	if err != nil {
		return err
	}
	return writeStored(w, http.StatusOK, entry)
}

func (m *Module) deleteContext(w http.ResponseWriter, r *http.Request) error {
	p, err := sidecar.PathIDs(r, "user_id", "session_id", "id")
	if err != nil {
		return err
	}
	if err := m.store.DeleteContext(r.Context(), p[0], p[1], p[2]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

var _ sidecar.Module = (*Module)(nil)

// searchRelevance ranks the session's indexed documents for q by BM25
// (package search): {results: [{kind, id, snippet, score, time}]}.
func (m *Module) searchRelevance(w http.ResponseWriter, r *http.Request, user, session string) error {
	limit, err := sidecar.QueryInt(r, "limit", DefaultLastN, 1, MaxSearch)
	if err != nil {
		return err
	}
	if len(search.Query(r.URL.Query().Get("q"))) == 0 {
		return sidecar.BadRequest("invalid_query", "q must hold at least one searchable word (stop words such as \"the\" are not indexed)")
	}
	cov := m.index.Prepare(r.Context(), user, session)
	res, err := m.index.Find(r.Context(), user, session, r.URL.Query().Get("q"), limit)
	if errors.Is(err, search.ErrNoTerms) {
		return sidecar.BadRequest("invalid_query", "q must hold at least one searchable word (stop words such as \"the\" are not indexed)")
	}
	if err != nil {
		return err
	}
	for i := range res {
		res[i].SessionID = ""
	}
	sidecar.WriteJSON(w, http.StatusOK, struct {
		Results []search.Result `json:"results"`
		Index   string          `json:"index,omitempty"`
	}{res, cov.Field()})
	return nil
}
