package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Google ADK sessions (module adk). An ADK session (app, user, session) is
// a sidecar session of the user of its own (AdkSession.SidecarSessionID).

func adkPath(app, user string, more ...string) (string, error) {
	return apiPath(append([]string{"adk", "apps", app, "users", user, "sessions"}, more...)...)
}

// CreateAdkSession creates an ADK session (createAdkSession); an existing
// session id is an error matching IsConflict (409 session_exists).
func (c *Client) CreateAdkSession(ctx context.Context, app, user string, req AdkCreateRequest) (*AdkSession, error) {
	p, err := adkPath(app, user)
	return answer[AdkSession](ctx, c, http.MethodPost, p, req, err)
}

// ListAdkSessions lists the user's ADK sessions of app as ADK's
// listSessions does (listAdkSessions).
func (c *Client) ListAdkSessions(ctx context.Context, app, user string, o AdkListOptions) (*AdkSessionList, error) {
	p, err := adkPath(app, user)
	out, _, err := call[AdkSessionList](ctx, c, request{method: http.MethodGet, path: p, query: o.query()}, err)
	return out, err
}

// ListAdkAppSessions lists app's ADK sessions of every user, as ADK's
// listSessions without a userId (listAdkAppSessions); follow NextCursor
// (in o.Cursor, alone) for the rest of a window past 1 000 sessions.
func (c *Client) ListAdkAppSessions(ctx context.Context, app string, o AdkListOptions) (*AdkAppSessionList, error) {
	p, err := apiPath("adk", "apps", app, "sessions")
	out, _, err := call[AdkAppSessionList](ctx, c, request{method: http.MethodGet, path: p, query: o.query()}, err)
	return out, err
}

func (o AdkListOptions) query() url.Values {
	q := url.Values{}
	for name, v := range map[string]*int{"limit": o.Limit, "offset": o.Offset, "page": o.Page} {
		if v != nil {
			q.Set(name, strconv.Itoa(*v))
		}
	}
	if o.Order != "" {
		q.Set("order", o.Order)
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// GetAdkSession reads a page of an ADK session (getAdkSession); IsNotFound
// when app has no such session. Follow NextCursor for older events.
func (c *Client) GetAdkSession(ctx context.Context, app, user, session string, o AdkGetOptions) (*AdkSession, error) {
	p, err := adkPath(app, user, session)
	q := url.Values{}
	if o.NumRecentEvents > 0 {
		q.Set("num_recent_events", strconv.Itoa(o.NumRecentEvents))
	}
	if o.AfterTimestamp != 0 {
		q.Set("after_timestamp", strconv.FormatFloat(o.AfterTimestamp, 'f', -1, 64))
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	out, _, err := call[AdkSession](ctx, c, request{method: http.MethodGet, path: p, query: q}, err)
	return out, err
}

// DeleteAdkSession deletes the ADK session, the whole sidecar session
// (deleteAdkSession); IsNotFound when app has no such session.
func (c *Client) DeleteAdkSession(ctx context.Context, app, user, session string) error {
	p, err := adkPath(app, user, session)
	return c.delete(ctx, p, err)
}

// AppendAdkEvent stores an event with its state delta in one script
// (appendAdkEvent); a stale copy is an error matching IsConflict (409
// stale_session), with nothing stored.
func (c *Client) AppendAdkEvent(ctx context.Context, app, user, session string, req AdkAppendRequest) (*AdkAppended, error) {
	p, err := adkPath(app, user, session, "events")
	return answer[AdkAppended](ctx, c, http.MethodPost, p, req, err)
}
