package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// Lifecycle, usage and cost (module usage).

// GetSession returns the session's record (getSession); IsNotFound for an
// unknown session.
func (c *Client) GetSession(ctx context.Context, user, session string) (*SessionRecord, error) {
	p, err := sessionPath(user, session)
	return answer[SessionRecord](ctx, c, http.MethodGet, p, nil, err)
}

// UsageOption configures one RecordUsage call by setting request headers.
type UsageOption func(http.Header)

// WithIdempotencyKey sends key (1-255 printable ASCII characters; "" sends
// none) as Idempotency-Key: a repeated post with the same key in the same
// session counts once and answers the first result with Created false.
func WithIdempotencyKey(key string) UsageOption {
	return func(h http.Header) {
		if key != "" {
			h.Set("Idempotency-Key", key)
		}
	}
}

// RecordUsage counts one LLM call in the session (recordUsage), creating the
// session's record as running if needed.
func (c *Client) RecordUsage(ctx context.Context, user, session string, req UsageRequest, opts ...UsageOption) (*UsageResult, error) {
	p, err := sessionPath(user, session, "usage")
	r := request{method: http.MethodPost, path: p, body: req, header: http.Header{}}
	for _, o := range opts {
		o(r.header)
	}
	res, status, err := call[UsageResult](ctx, c, r, err)
	if err != nil {
		return nil, err
	}
	res.Created = status == http.StatusCreated
	return res, nil
}

// CompleteSession ends the session as completed and returns its record
// (completeSession). Again is a no-op; after FailSession it is an error
// matching ErrSessionEnded (409).
func (c *Client) CompleteSession(ctx context.Context, user, session string) (*SessionRecord, error) {
	p, err := sessionPath(user, session, "complete")
	return answer[SessionRecord](ctx, c, http.MethodPost, p, nil, err)
}

// FailSession ends the session as failed and returns its record
// (failSession). Again is a no-op; after CompleteSession it is an error
// matching ErrSessionEnded (409).
func (c *Client) FailSession(ctx context.Context, user, session string) (*SessionRecord, error) {
	p, err := sessionPath(user, session, "fail")
	return answer[SessionRecord](ctx, c, http.MethodPost, p, nil, err)
}

// ListUserSessions returns one page of the user's sessions, most recently
// active first (listUserSessions). AllUserSessions follows the cursors.
func (c *Client) ListUserSessions(ctx context.Context, user string, opts ListSessionsOptions) (*SessionList, error) {
	p, err := apiPath("users", user, "sessions")
	return c.listSessions(ctx, p, opts, err)
}

// ListSessions returns one page of every user's sessions, most recently
// active first (listSessions). AllSessions follows the cursors.
func (c *Client) ListSessions(ctx context.Context, opts ListSessionsOptions) (*SessionList, error) {
	return c.listSessions(ctx, "/v1/sessions", opts, nil)
}

func (c *Client) listSessions(ctx context.Context, path string, opts ListSessionsOptions, pathErr error) (*SessionList, error) {
	q := url.Values{}
	if opts.Status != "" {
		q.Set("status", string(opts.Status))
	}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	for k, v := range opts.Metadata {
		q.Set("metadata."+k, v)
	}
	l, _, err := call[SessionList](ctx, c, request{method: http.MethodGet, path: path, query: q}, pathErr)
	return l, err
}

// AllUserSessions iterates over the user's sessions from opts.Cursor on,
// fetching pages of opts.Limit and following NextCursor. An error is
// yielded once, with a zero record, and ends the iteration.
//
//	for rec, err := range c.AllUserSessions(ctx, "alice", client.ListSessionsOptions{Status: client.StatusAbandoned}) {
//		if err != nil { return err }
//		...
//	}
func (c *Client) AllUserSessions(ctx context.Context, user string, opts ListSessionsOptions) iter.Seq2[SessionRecord, error] {
	return pages(opts, func(o ListSessionsOptions) (*SessionList, error) { return c.ListUserSessions(ctx, user, o) })
}

// AllSessions is AllUserSessions across users (ListSessions).
func (c *Client) AllSessions(ctx context.Context, opts ListSessionsOptions) iter.Seq2[SessionRecord, error] {
	return pages(opts, func(o ListSessionsOptions) (*SessionList, error) { return c.ListSessions(ctx, o) })
}

func pages(opts ListSessionsOptions, page func(ListSessionsOptions) (*SessionList, error)) iter.Seq2[SessionRecord, error] {
	return func(yield func(SessionRecord, error) bool) {
		for {
			l, err := page(opts)
			if err != nil {
				yield(SessionRecord{}, err)
				return
			}
			for _, r := range l.Sessions {
				if !yield(r, nil) {
					return
				}
			}
			if l.NextCursor == "" {
				return
			}
			opts.Cursor = l.NextCursor
		}
	}
}

// GetSessionStats returns the sessions by status now and the all-time usage
// (getSessionStats).
func (c *Client) GetSessionStats(ctx context.Context) (*SessionStats, error) {
	return answer[SessionStats](ctx, c, http.MethodGet, "/v1/sessions/stats", nil, nil)
}

// GetCostByModel returns the all-time usage per model name, most expensive
// first (getCostByModel).
func (c *Client) GetCostByModel(ctx context.Context) (*CostByModel, error) {
	return answer[CostByModel](ctx, c, http.MethodGet, "/v1/sessions/cost-by-model", nil, nil)
}
