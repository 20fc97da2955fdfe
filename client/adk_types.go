package client

import "encoding/json"

// Google ADK sessions (module adk): the document's Adk* schemas.

// AdkCreateRequest creates an ADK session (createAdkSession): SessionID
// nil for a random UUID; State's app: and user: keys go to the app's and
// the user's state, temp: keys are dropped.
type AdkCreateRequest struct {
	SessionID *string                    `json:"session_id,omitempty"`
	State     map[string]json.RawMessage `json:"state,omitempty"`
}

// AdkSession is an ADK session as getAdkSession answers it: State,
// LastUpdateTime, CreatedAt and EventCount on the first page only;
// Events oldest first; NextCursor continues with older events.
type AdkSession struct {
	ID      string `json:"id"`
	AppName string `json:"app_name"`
	UserID  string `json:"user_id"`
	// SidecarSessionID is the sidecar session holding it (an ADK session
	// is keyed by app, user and session).
	SidecarSessionID string                     `json:"sidecar_session_id"`
	State            map[string]json.RawMessage `json:"state,omitempty"`
	LastUpdateTime   *float64                   `json:"last_update_time,omitempty"`
	CreatedAt        *int64                     `json:"created_at,omitempty"`
	EventCount       *int64                     `json:"event_count,omitempty"`
	Events           []json.RawMessage          `json:"events"`
	NextCursor       *string                    `json:"next_cursor"`
}

// AdkListedSession is one session of a listing (no state, no events).
type AdkListedSession struct {
	ID               string  `json:"id"`
	AppName          string  `json:"app_name"`
	UserID           string  `json:"user_id"`
	SidecarSessionID string  `json:"sidecar_session_id"`
	LastUpdateTime   float64 `json:"last_update_time"`
}

// AdkSessionList is listAdkSessions' answer, ADK's ListSessionsResponse.
type AdkSessionList struct {
	Sessions   []AdkListedSession `json:"sessions"`
	Page       int                `json:"page"`
	Limit      int                `json:"limit"`
	TotalItems int                `json:"total_items"`
	TotalPages int                `json:"total_pages"`
}

// AdkAppSessionList is listAdkAppSessions' answer: a page of an app's
// sessions across users; NextCursor (AdkListOptions.Cursor) continues a
// window of more than 1 000 sessions.
type AdkAppSessionList struct {
	AdkSessionList
	NextCursor *string `json:"next_cursor"`
}

// AdkAppendRequest is appendAdkEvent's body: the event (a JSON object
// with a numeric timestamp), the caller's copy's last update time, the
// state delta (ADK's prefixes apply).
type AdkAppendRequest struct {
	Event          json.RawMessage            `json:"event"`
	LastUpdateTime float64                    `json:"last_update_time"`
	StateDelta     map[string]json.RawMessage `json:"state_delta,omitempty"`
}

// AdkAppended is appendAdkEvent's answer.
type AdkAppended struct {
	Index          int64   `json:"index"`
	Replaced       bool    `json:"replaced"`
	LastUpdateTime float64 `json:"last_update_time"`
}

// AdkListOptions are listAdkSessions' query parameters (ADK's): Limit nil
// for every session; Order "", "asc" or "desc".
type AdkListOptions struct {
	Limit, Offset, Page *int
	Order               string
	// Cursor continues a listing across users (listAdkAppSessions), sent
	// alone.
	Cursor string
}

// AdkGetOptions are getAdkSession's query parameters.
type AdkGetOptions struct {
	NumRecentEvents int     // 0: all
	AfterTimestamp  float64 // 0: no bound
	Limit           int     // events per page; 0: the server's default
	Cursor          string  // a NextCursor
}
