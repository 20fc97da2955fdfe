package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Messages (module messages).

// MessageOption configures one append by setting request headers
// (WithIdempotencyKey, IfLeaf).
type MessageOption = UsageOption

// IfLeaf sends If-Match: the append is refused (412 leaf_moved) unless id
// is still the session's latest leaf.
func IfLeaf(id string) MessageOption {
	return func(h http.Header) { h.Set("If-Match", strconv.Quote(id)) }
}

// AppendMessages appends msgs chained in order, all or nothing
// (appendMessages): one message is sent as itself, several as a batch.
// Each answer's Created is false for a retry (the same ids and fields, or
// the same WithIdempotencyKey).
func (c *Client) AppendMessages(ctx context.Context, user, session string, msgs []MessageInput, opts ...MessageOption) ([]Message, error) {
	p, err := sessionPath(user, session, "messages")
	r := request{method: http.MethodPost, path: p, header: http.Header{}}
	for _, o := range opts {
		o(r.header)
	}
	if len(msgs) == 1 {
		r.body = msgs[0]
		m, status, err := call[Message](ctx, c, r, err)
		if err != nil {
			return nil, err
		}
		m.Created = status == http.StatusCreated
		return []Message{*m}, nil
	}
	r.body = MessageBatch{Messages: msgs}
	l, status, err := call[MessageList](ctx, c, r, err)
	if err != nil {
		return nil, err
	}
	for i := range l.Messages {
		l.Messages[i].Created = status == http.StatusCreated
	}
	return l.Messages, nil
}

// AppendMessage appends one message (appendMessages with one).
func (c *Client) AppendMessage(ctx context.Context, user, session string, m MessageInput, opts ...MessageOption) (*Message, error) {
	out, err := c.AppendMessages(ctx, user, session, []MessageInput{m}, opts...)
	if err != nil {
		return nil, err
	}
	return &out[0], nil
}

// ListMessages reads a page of the path root..leaf (listMessages); an
// unknown session has an empty path. A page cut at the sidecar's answer
// cap holds fewer messages; NextCursor continues it.
func (c *Client) ListMessages(ctx context.Context, user, session string, o PathOptions) (*MessagePage, error) {
	p, err := sessionPath(user, session, "messages")
	q := url.Values{}
	if o.Leaf != "" {
		q.Set("leaf", o.Leaf)
	}
	if o.Desc {
		q.Set("order", "desc")
	}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.After != "" {
		q.Set("after", o.After)
	}
	if o.Before != "" {
		q.Set("before", o.Before)
	}
	if o.Offset != 0 {
		q.Set("offset", strconv.Itoa(o.Offset))
	}
	if o.Raw {
		q.Set("compacted", "false")
	}
	page, _, err := call[MessagePage](ctx, c, request{method: http.MethodGet, path: p, query: q}, err)
	return page, err
}

// GetMessage reads one message (getMessage); IsNotFound when there is none.
func (c *Client) GetMessage(ctx context.Context, user, session, id string) (*Message, error) {
	p, err := sessionPath(user, session, "messages", id)
	return answer[Message](ctx, c, http.MethodGet, p, nil, err)
}

// ListChildren reads the branches from message id, oldest first
// (listChildren).
func (c *Client) ListChildren(ctx context.Context, user, session, id string) ([]Message, error) {
	p, err := sessionPath(user, session, "messages", id, "children")
	l, err := answer[MessageList](ctx, c, http.MethodGet, p, nil, err)
	if err != nil {
		return nil, err
	}
	return l.Messages, nil
}

// PutMessage stores m under id (putMessage): a new id is appended, a
// stored one replaced in place; Created tells which.
func (c *Client) PutMessage(ctx context.Context, user, session, id string, m MessageInput) (*Message, error) {
	p, err := sessionPath(user, session, "messages", id)
	out, status, err := call[Message](ctx, c, request{method: http.MethodPut, path: p, body: m}, err)
	if err != nil {
		return nil, err
	}
	out.Created = status == http.StatusCreated
	return out, nil
}

// ApplyMessageTransaction applies one history transaction atomically
// (applyMessageTransaction): readers see the history before or after it,
// never between. A retry with the same OperationID answers the first result
// with Applied false; the same id with another transaction is 409
// operation_conflict, and a replace_suffix whose ExpectedSuffix is not the
// stored one is 409 suffix_mismatch, nothing changed either way.
func (c *Client) ApplyMessageTransaction(ctx context.Context, user, session string, tx MessageTransaction) (*MessageTransactionResult, error) {
	p, err := sessionPath(user, session, "messages", "transactions")
	return answer[MessageTransactionResult](ctx, c, http.MethodPost, p, tx, err)
}

// PatchMessage replaces the fields patch sets (patchMessage).
func (c *Client) PatchMessage(ctx context.Context, user, session, id string, patch MessagePatch) (*Message, error) {
	p, err := sessionPath(user, session, "messages", id)
	return answer[Message](ctx, c, http.MethodPatch, p, patch, err)
}

// DeleteMessage deletes a message without children, or with subtree its
// descendants too (deleteMessage); 409 has_children otherwise.
func (c *Client) DeleteMessage(ctx context.Context, user, session, id string, subtree bool) error {
	p, err := sessionPath(user, session, "messages", id)
	r := request{method: http.MethodDelete, path: p}
	if subtree {
		r.query = url.Values{"subtree": {"true"}}
	}
	_, _, err = call[struct{}](ctx, c, r, err)
	return err
}

// PopMessage removes the latest leaf and returns it (popMessage);
// IsNotFound when the session has no messages.
func (c *Client) PopMessage(ctx context.Context, user, session string) (*Message, error) {
	p, err := sessionPath(user, session, "messages", "pop")
	return answer[Message](ctx, c, http.MethodPost, p, nil, err)
}

// ClearMessages removes every message of the session, keeping the rest
// (clearMessages).
func (c *Client) ClearMessages(ctx context.Context, user, session string) error {
	p, err := sessionPath(user, session, "messages")
	return c.delete(ctx, p, err)
}

// ForkSession creates a new session of user holding the path root..At of
// session (forkSession) and returns its record; Created is false for a
// retry with the same WithIdempotencyKey.
func (c *Client) ForkSession(ctx context.Context, user, session string, req ForkSessionRequest, opts ...MessageOption) (*SessionRecord, error) {
	return c.newSession(ctx, user, session, "fork", req, opts)
}

// SplitSession ends session as completed (end_reason split) with the
// summary and starts its continuation, whose record it returns
// (splitSession).
func (c *Client) SplitSession(ctx context.Context, user, session string, req SplitSessionRequest, opts ...MessageOption) (*SessionRecord, error) {
	return c.newSession(ctx, user, session, "split", req, opts)
}

func (c *Client) newSession(ctx context.Context, user, session, verb string, body any, opts []MessageOption) (*SessionRecord, error) {
	p, err := sessionPath(user, session, verb)
	return c.postSession(ctx, p, err, body, opts)
}

// CreateCompaction stores a compaction overlay of req's range
// (createCompaction).
func (c *Client) CreateCompaction(ctx context.Context, user, session string, req CompactionRequest) (*Compaction, error) {
	p, err := sessionPath(user, session, "compactions")
	return answer[Compaction](ctx, c, http.MethodPost, p, req, err)
}

// ListCompactions returns the compactions in force, oldest first
// (listCompactions).
func (c *Client) ListCompactions(ctx context.Context, user, session string) ([]Compaction, error) {
	p, err := sessionPath(user, session, "compactions")
	l, err := answer[CompactionList](ctx, c, http.MethodGet, p, nil, err)
	if err != nil {
		return nil, err
	}
	return l.Compactions, nil
}

// SearchUser ranks the user's messages across all of their sessions for q
// (BM25, best first, at most limit: 1-50, 0 = 10) (searchUser).
func (c *Client) SearchUser(ctx context.Context, user, q string, limit int) ([]SearchResult, error) {
	p, err := apiPath("users", user, "search")
	return c.search(ctx, p, url.Values{"q": {q}}, limit, err)
}

// SearchRelevant ranks the session's messages for q (searchEntries with
// rank=relevance; 1-100, 0 = 10).
func (c *Client) SearchRelevant(ctx context.Context, user, session, q string, limit int) ([]SearchResult, error) {
	p, err := sessionPath(user, session, "search")
	return c.search(ctx, p, url.Values{"q": {q}, "rank": {"relevance"}}, limit, err)
}

func (c *Client) search(ctx context.Context, p string, q url.Values, limit int, pathErr error) ([]SearchResult, error) {
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	res, _, err := call[SearchResults](ctx, c, request{method: http.MethodGet, path: p, query: q}, pathErr)
	if err != nil {
		return nil, err
	}
	return res.Results, nil
}
