package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// Session registry (module registry).

// CreateSession creates a session of user with a title and metadata
// (createSession); Created is false for a retry with the same
// WithIdempotencyKey. An existing session is an error matching IsConflict
// (409 session_exists).
func (c *Client) CreateSession(ctx context.Context, user string, req CreateSessionRequest, opts ...UsageOption) (*SessionRecord, error) {
	p, err := apiPath("users", user, "sessions")
	return c.postSession(ctx, p, err, req, opts)
}

// postSession posts body to path p (pathErr: p's own error) with opts'
// headers and answers the session record; Created: 201, not a retry.
func (c *Client) postSession(ctx context.Context, p string, pathErr error, body any, opts []UsageOption) (*SessionRecord, error) {
	r := request{method: http.MethodPost, path: p, body: body, header: http.Header{}}
	for _, o := range opts {
		o(r.header)
	}
	res, status, err := call[SessionRecord](ctx, c, r, pathErr)
	if err != nil {
		return nil, err
	}
	res.Created = status == http.StatusCreated
	return res, nil
}

// UpdateSession sets or removes the title and merge-patches the metadata
// (updateSession); IsNotFound for an unknown session.
func (c *Client) UpdateSession(ctx context.Context, user, session string, req UpdateSessionRequest) (*SessionRecord, error) {
	p, err := sessionPath(user, session)
	return answer[SessionRecord](ctx, c, http.MethodPatch, p, req, err)
}

// CompleteSessionWithSummary is CompleteSession storing a human summary.
func (c *Client) CompleteSessionWithSummary(ctx context.Context, user, session, summary string) (*SessionRecord, error) {
	p, err := sessionPath(user, session, "complete")
	return answer[SessionRecord](ctx, c, http.MethodPost, p, EndSessionRequest{Summary: &summary}, err)
}

// StartSession starts or reuses the user's active session (startSession):
// IsNew reports which.
func (c *Client) StartSession(ctx context.Context, user string, req StartSessionRequest) (*SessionStart, error) {
	p, err := apiPath("users", user, "active-session")
	return answer[SessionStart](ctx, c, http.MethodPost, p, req, err)
}

// EndActiveSession ends, as completed, the session StartSession would
// reuse and returns its record (endActiveSession); IsNotFound when the
// user has none.
func (c *Client) EndActiveSession(ctx context.Context, user string, req EndActiveSessionRequest) (*SessionRecord, error) {
	p, err := apiPath("users", user, "active-session", "end")
	return answer[SessionRecord](ctx, c, http.MethodPost, p, req, err)
}

// GetSessionState returns the session's state object ({} when none was
// set; getSessionState); IsNotFound for an unknown session.
func (c *Client) GetSessionState(ctx context.Context, user, session string) (json.RawMessage, error) {
	p, err := sessionPath(user, session, "state")
	return rawAnswer(ctx, c, http.MethodGet, p, nil, err)
}

// PatchSessionState applies a JSON merge patch (a JSON object: nil map
// values remove keys) to the session's state and returns the new state
// (patchSessionState).
func (c *Client) PatchSessionState(ctx context.Context, user, session string, patch any) (json.RawMessage, error) {
	p, err := sessionPath(user, session, "state")
	return rawAnswer(ctx, c, http.MethodPatch, p, patch, err)
}

// GetUserState returns the user's state object ({} when none; getUserState).
func (c *Client) GetUserState(ctx context.Context, user string) (json.RawMessage, error) {
	p, err := apiPath("users", user, "state")
	return rawAnswer(ctx, c, http.MethodGet, p, nil, err)
}

// PatchUserState applies a JSON merge patch to the user's state and returns
// the new state (patchUserState).
func (c *Client) PatchUserState(ctx context.Context, user string, patch any) (json.RawMessage, error) {
	p, err := apiPath("users", user, "state")
	return rawAnswer(ctx, c, http.MethodPatch, p, patch, err)
}

func rawAnswer(ctx context.Context, c *Client, method, path string, body any, pathErr error) (json.RawMessage, error) {
	out, err := answer[json.RawMessage](ctx, c, method, path, body, pathErr)
	if err != nil {
		return nil, err
	}
	return *out, nil
}

// EraseUser erases every key and index member of the user, in bounded
// steps (eraseUser): Erased true when done, else Remaining estimates the
// sessions left and the caller calls again (from any process) until done.
// Until 30 s after it is done, the user's writes answer 409 user_erasing.
func (c *Client) EraseUser(ctx context.Context, user string) (*Erasure, error) {
	p, err := apiPath("users", user)
	return answer[Erasure](ctx, c, http.MethodDelete, p, nil, err)
}
