package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Session memory (module sessions) and TTL (module ttl).

// AppendEntry appends a Q&A entry (appendEntry). A qa_id the session
// already holds stores nothing and returns the stored entry with Created
// false, so a retried append is safe.
func (c *Client) AppendEntry(ctx context.Context, user, session string, req AppendEntryRequest) (*EntryResult, error) {
	p, err := sessionPath(user, session, "entries")
	e, status, err := call[SessionQAEntry](ctx, c, request{method: http.MethodPost, path: p, body: req}, err)
	if err != nil {
		return nil, err
	}
	return &EntryResult{SessionQAEntry: *e, Created: status == http.StatusCreated}, nil
}

// ListEntries returns the newest lastN entries (1-1000; 0 = 10), oldest
// first (listEntries); none for an unknown session.
func (c *Client) ListEntries(ctx context.Context, user, session string, lastN int) ([]SessionQAEntry, error) {
	p, err := sessionPath(user, session, "entries")
	return list[SessionQAEntry](ctx, c, p, lastNQuery(lastN), err)
}

// GetEntry returns one entry (getEntry); IsNotFound when there is none.
func (c *Client) GetEntry(ctx context.Context, user, session, qaID string) (*SessionQAEntry, error) {
	p, err := sessionPath(user, session, "entries", qaID)
	return answer[SessionQAEntry](ctx, c, http.MethodGet, p, nil, err)
}

// UpdateEntry sets the fields given and returns the entry (updateEntry).
func (c *Client) UpdateEntry(ctx context.Context, user, session, qaID string, req UpdateEntryRequest) (*SessionQAEntry, error) {
	p, err := sessionPath(user, session, "entries", qaID)
	return answer[SessionQAEntry](ctx, c, http.MethodPatch, p, req, err)
}

// DeleteEntry removes an entry (deleteEntry).
func (c *Client) DeleteEntry(ctx context.Context, user, session, qaID string) error {
	p, err := sessionPath(user, session, "entries", qaID)
	return c.delete(ctx, p, err)
}

// SetFeedback sets an entry's feedback and returns the entry (setFeedback).
func (c *Client) SetFeedback(ctx context.Context, user, session, qaID string, req FeedbackRequest) (*SessionQAEntry, error) {
	p, err := sessionPath(user, session, "entries", qaID, "feedback")
	return answer[SessionQAEntry](ctx, c, http.MethodPut, p, req, err)
}

// ClearFeedback clears an entry's feedback text and score and returns the
// entry (clearFeedback).
func (c *Client) ClearFeedback(ctx context.Context, user, session, qaID string) (*SessionQAEntry, error) {
	p, err := sessionPath(user, session, "entries", qaID, "feedback")
	return answer[SessionQAEntry](ctx, c, http.MethodDelete, p, nil, err)
}

// SearchEntries returns the entries whose question, answer or context
// contain every word of q (case-insensitive), newest first, at most limit
// (1-100; 0 = 10) (searchEntries).
func (c *Client) SearchEntries(ctx context.Context, user, session, q string, limit int) ([]SessionQAEntry, error) {
	p, err := sessionPath(user, session, "search")
	query := url.Values{"q": {q}}
	if limit != 0 {
		query.Set("limit", strconv.Itoa(limit))
	}
	return list[SessionQAEntry](ctx, c, p, query, err)
}

// DeleteSession removes the whole session: entries, traces, context and
// record (deleteSession).
func (c *Client) DeleteSession(ctx context.Context, user, session string) error {
	p, err := sessionPath(user, session)
	return c.delete(ctx, p, err)
}

// AppendTrace appends an agent trace step and returns it as stored
// (appendTrace).
func (c *Client) AppendTrace(ctx context.Context, user, session string, req AppendTraceRequest) (*AgentTrace, error) {
	p, err := sessionPath(user, session, "traces")
	return answer[AgentTrace](ctx, c, http.MethodPost, p, req, err)
}

// ListTraces returns the newest lastN trace steps (1-1000; 0 = 10), oldest
// first (listTraces).
func (c *Client) ListTraces(ctx context.Context, user, session string, lastN int) ([]AgentTrace, error) {
	p, err := sessionPath(user, session, "traces")
	return list[AgentTrace](ctx, c, p, lastNQuery(lastN), err)
}

// AppendContext appends a session-context entry (appendContext): any JSON
// object; "id" is filled when absent. An id the session already holds
// stores nothing and returns the stored entry with Created false.
func (c *Client) AppendContext(ctx context.Context, user, session string, entry ContextEntry) (*ContextResult, error) {
	p, err := sessionPath(user, session, "context")
	e, status, err := call[ContextEntry](ctx, c, request{method: http.MethodPost, path: p, body: nonNil(entry)}, err)
	if err != nil {
		return nil, err
	}
	return &ContextResult{ContextEntry: *e, Created: status == http.StatusCreated}, nil
}

// ListContext returns the session's context entries, oldest first
// (listContext).
func (c *Client) ListContext(ctx context.Context, user, session string) ([]ContextEntry, error) {
	p, err := sessionPath(user, session, "context")
	return list[ContextEntry](ctx, c, p, nil, err)
}

// UpdateContext merges patch shallowly into a context entry and returns it
// (updateContext); patch cannot hold "id".
func (c *Client) UpdateContext(ctx context.Context, user, session, id string, patch ContextEntry) (ContextEntry, error) {
	p, err := sessionPath(user, session, "context", id)
	e, err := answer[ContextEntry](ctx, c, http.MethodPatch, p, nonNil(patch), err)
	if err != nil {
		return nil, err
	}
	return *e, nil
}

// DeleteContext removes a context entry (deleteContext).
func (c *Client) DeleteContext(ctx context.Context, user, session, id string) error {
	p, err := sessionPath(user, session, "context", id)
	return c.delete(ctx, p, err)
}

// GetSessionTTL returns the session's remaining TTL (getSessionTTL).
func (c *Client) GetSessionTTL(ctx context.Context, user, session string) (*TTL, error) {
	p, err := sessionPath(user, session, "ttl")
	return answer[TTL](ctx, c, http.MethodGet, p, nil, err)
}

// SetSessionTTL gives the session its own TTL in seconds, on every key at
// once and kept by later writes; 0 = never expires, answered as -1
// (setSessionTTL).
func (c *Client) SetSessionTTL(ctx context.Context, user, session string, ttlSeconds int64) (*TTL, error) {
	p, err := sessionPath(user, session, "ttl")
	return answer[TTL](ctx, c, http.MethodPut, p, TTL{TTLSeconds: ttlSeconds}, err)
}

// nonNil sends a nil entry as {} rather than null.
func nonNil(e ContextEntry) ContextEntry {
	if e == nil {
		return ContextEntry{}
	}
	return e
}

func lastNQuery(n int) url.Values {
	if n == 0 {
		return nil
	}
	return url.Values{"last_n": {strconv.Itoa(n)}}
}
