package client

import (
	"context"
	"net/http"
	"net/url"
)

// Context blocks, the system prompt and tools (module blocks).

func userBlockPath(user string, more ...string) (string, error) {
	return apiPath(append([]string{"users", user, "blocks"}, more...)...)
}

func putBlock(ctx context.Context, c *Client, path string, req PutBlockRequest, pathErr error) (*Block, error) {
	b, status, err := call[Block](ctx, c, request{method: http.MethodPut, path: path, body: req}, pathErr)
	if err != nil {
		return nil, err
	}
	b.Created = status == http.StatusCreated
	return b, nil
}

// ListUserBlocks returns the user's blocks in prompt order (listUserBlocks).
func (c *Client) ListUserBlocks(ctx context.Context, user string) (*BlockList, error) {
	p, err := userBlockPath(user)
	return answer[BlockList](ctx, c, http.MethodGet, p, nil, err)
}

// GetUserBlock returns the user's block of label (getUserBlock); IsNotFound
// when there is none.
func (c *Client) GetUserBlock(ctx context.Context, user, label string) (*Block, error) {
	p, err := userBlockPath(user, label)
	return answer[Block](ctx, c, http.MethodGet, p, nil, err)
}

// PutUserBlock creates or replaces the user's block of label
// (putUserBlock); Created reports which. Past max_tokens: 409 block_full.
func (c *Client) PutUserBlock(ctx context.Context, user, label string, req PutBlockRequest) (*Block, error) {
	p, err := userBlockPath(user, label)
	return putBlock(ctx, c, p, req, err)
}

// AppendUserBlock appends content to the user's block of label
// (appendUserBlock); IsNotFound when there is none, 409 block_full past
// its max_tokens.
func (c *Client) AppendUserBlock(ctx context.Context, user, label, content string) (*Block, error) {
	p, err := userBlockPath(user, label, "append")
	return answer[Block](ctx, c, http.MethodPost, p, AppendBlockRequest{Content: content}, err)
}

// DeleteUserBlock deletes the user's block of label (deleteUserBlock).
func (c *Client) DeleteUserBlock(ctx context.Context, user, label string) error {
	p, err := userBlockPath(user, label)
	return c.delete(ctx, p, err)
}

// ListSessionBlocks returns the user's and the session's blocks merged (a
// session block overrides the user's of its label), in prompt order
// (listSessionBlocks).
func (c *Client) ListSessionBlocks(ctx context.Context, user, session string) (*BlockList, error) {
	p, err := sessionPath(user, session, "blocks")
	return answer[BlockList](ctx, c, http.MethodGet, p, nil, err)
}

// GetSessionBlock returns the session's block of label, else the user's
// (getSessionBlock).
func (c *Client) GetSessionBlock(ctx context.Context, user, session, label string) (*Block, error) {
	p, err := sessionPath(user, session, "blocks", label)
	return answer[Block](ctx, c, http.MethodGet, p, nil, err)
}

// PutSessionBlock creates or replaces the session's block of label
// (putSessionBlock).
func (c *Client) PutSessionBlock(ctx context.Context, user, session, label string, req PutBlockRequest) (*Block, error) {
	p, err := sessionPath(user, session, "blocks", label)
	return putBlock(ctx, c, p, req, err)
}

// AppendSessionBlock appends content to the session's block of label, else
// to the user's (appendSessionBlock).
func (c *Client) AppendSessionBlock(ctx context.Context, user, session, label, content string) (*Block, error) {
	p, err := sessionPath(user, session, "blocks", label, "append")
	return answer[Block](ctx, c, http.MethodPost, p, AppendBlockRequest{Content: content}, err)
}

// DeleteSessionBlock deletes the session's block of label (the user's
// stays; deleteSessionBlock).
func (c *Client) DeleteSessionBlock(ctx context.Context, user, session, label string) error {
	p, err := sessionPath(user, session, "blocks", label)
	return c.delete(ctx, p, err)
}

// GetSystemPrompt returns the system prompt rendered from the session's
// blocks (getSystemPrompt); frozen returns the prompt frozen at the first
// frozen call, until RefreshSystemPrompt.
func (c *Client) GetSystemPrompt(ctx context.Context, user, session string, frozen bool) (*SystemPrompt, error) {
	p, err := sessionPath(user, session, "system-prompt")
	q := url.Values{"format": {"json"}}
	if frozen {
		q.Set("frozen", "true")
	}
	out, _, err := call[SystemPrompt](ctx, c, request{method: http.MethodGet, path: p, query: q}, err)
	return out, err
}

// RefreshSystemPrompt renders the prompt again and freezes it
// (refreshSystemPrompt).
func (c *Client) RefreshSystemPrompt(ctx context.Context, user, session string) (*SystemPrompt, error) {
	p, err := sessionPath(user, session, "system-prompt", "refresh")
	out, _, err := call[SystemPrompt](ctx, c, request{method: http.MethodPost, path: p, query: url.Values{"format": {"json"}}}, err)
	return out, err
}

// ListTools returns the session's tool definitions in format
// (ToolFormatOpenAI or ToolFormatAnthropic; listTools).
func (c *Client) ListTools(ctx context.Context, user, session, format string) (*ToolList, error) {
	p, err := sessionPath(user, session, "tools")
	out, _, err := call[ToolList](ctx, c, request{method: http.MethodGet, path: p, query: url.Values{"format": {format}}}, err)
	return out, err
}

// CallTool runs a tool call the model made and returns the text to give it
// back (callTool); a mistake of the model is a result with IsError, not an
// error.
func (c *Client) CallTool(ctx context.Context, user, session, name string, req ToolCallRequest) (*ToolResult, error) {
	p, err := sessionPath(user, session, "tools", name)
	return answer[ToolResult](ctx, c, http.MethodPost, p, req, err)
}
