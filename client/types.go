package client

import (
	"encoding/json"
	"time"
)

// The types below are the schemas of openapi/openapi.json, with the same
// names and JSON field names (a test keeps them equal).

// SessionQAEntry is one Q&A entry, Cognee's SessionQAEntry: the ten fields
// in Cognee's model order, so that encoding it writes them all, nulls
// included. Nullable fields are pointers, maps or slices (nil = null).
type SessionQAEntry struct {
	// Time is ISO 8601 as Python writes it
	// ("2026-11-21T23:15:37.123456+00:00"); entries Cognee wrote have no
	// offset. See Timestamp.
	Time                  string           `json:"time"`
	Question              string           `json:"question"`
	Context               string           `json:"context"`
	Answer                string           `json:"answer"`
	QAID                  string           `json:"qa_id"`
	FeedbackText          *string          `json:"feedback_text"`
	FeedbackScore         *int             `json:"feedback_score"` // 1-5
	UsedGraphElementIDs   *GraphElementIDs `json:"used_graph_element_ids"`
	MemifyMetadata        map[string]any   `json:"memify_metadata"` // booleans or detail objects
	UsedSessionContextIDs []string         `json:"used_session_context_ids"`
}

// Timestamp parses Time: the sidecar's form with an offset, or Cognee's
// without one (UTC).
func (e *SessionQAEntry) Timestamp() (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, e.Time); err == nil {
		return t, nil
	}
	return time.Parse("2006-01-02T15:04:05.999999999", e.Time)
}

// GraphElementIDs are the graph elements an answer used.
type GraphElementIDs struct {
	NodeIDs []string `json:"node_ids,omitempty"`
	EdgeIDs []string `json:"edge_ids,omitempty"`
}

// EntryResult is the answer to AppendEntry: the stored entry, and whether
// this call stored it (201) or the session already held its qa_id (200: a
// retry; nothing was written and the entry is the one stored before).
type EntryResult struct {
	SessionQAEntry
	Created bool `json:"-"`
}

// AppendEntryRequest is a new entry. The sidecar fills time, and qa_id when
// empty (a UUID). Empty optional fields are left out (stored as null).
type AppendEntryRequest struct {
	QAID                  string           `json:"qa_id,omitempty"`
	Question              string           `json:"question"`
	Answer                string           `json:"answer"`
	Context               string           `json:"context,omitempty"`
	FeedbackText          *string          `json:"feedback_text,omitempty"`
	FeedbackScore         *int             `json:"feedback_score,omitempty"`
	UsedGraphElementIDs   *GraphElementIDs `json:"used_graph_element_ids,omitempty"`
	MemifyMetadata        map[string]any   `json:"memify_metadata,omitempty"`
	UsedSessionContextIDs []string         `json:"used_session_context_ids,omitempty"`
}

// UpdateEntryRequest sets the fields given: a nil pointer or an unset
// Nullable leaves a field unchanged, Null[T]() clears a nullable one.
// MemifyMetadata is merged key-wise (Null or an empty map clears it). At
// least one field must be set.
type UpdateEntryRequest struct {
	Question              *string                   `json:"question,omitempty"`
	Answer                *string                   `json:"answer,omitempty"`
	Context               *string                   `json:"context,omitempty"`
	FeedbackText          Nullable[string]          `json:"feedback_text,omitzero"`
	FeedbackScore         Nullable[int]             `json:"feedback_score,omitzero"`
	UsedGraphElementIDs   Nullable[GraphElementIDs] `json:"used_graph_element_ids,omitzero"`
	MemifyMetadata        Nullable[map[string]any]  `json:"memify_metadata,omitzero"`
	UsedSessionContextIDs Nullable[[]string]        `json:"used_session_context_ids,omitzero"`
}

// FeedbackRequest sets feedback_text and/or feedback_score (1-5);
// Null[T]() clears one. At least one must be set.
type FeedbackRequest struct {
	FeedbackText  Nullable[string] `json:"feedback_text,omitzero"`
	FeedbackScore Nullable[int]    `json:"feedback_score,omitzero"`
}

// Nullable is a field of an update that is left out (the zero value), set
// to a value (Set) or set to null (Null).
type Nullable[T any] struct {
	value T
	state nullableState
}

type nullableState uint8

const (
	unset nullableState = iota
	isValue
	isNull
)

// Set returns a Nullable holding v.
func Set[T any](v T) Nullable[T] { return Nullable[T]{value: v, state: isValue} }

// Null returns a Nullable that sends null.
func Null[T any]() Nullable[T] { return Nullable[T]{state: isNull} }

// IsZero reports whether n is left out (omitzero uses it).
func (n Nullable[T]) IsZero() bool { return n.state == unset }

// Get returns the value and whether n holds one (false for unset and null).
func (n Nullable[T]) Get() (T, bool) { return n.value, n.state == isValue }

// MarshalJSON writes the value, or null.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.state != isValue {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// AgentTrace is one agent trace step, Cognee's SessionAgentTraceEntry.
type AgentTrace struct {
	TraceID           string         `json:"trace_id"`
	OriginFunction    string         `json:"origin_function"`
	Status            string         `json:"status"`
	MemoryQuery       string         `json:"memory_query,omitempty"`
	MemoryContext     string         `json:"memory_context,omitempty"`
	MethodParams      map[string]any `json:"method_params,omitempty"`
	MethodReturnValue any            `json:"method_return_value,omitempty"` // any JSON value
	ErrorMessage      string         `json:"error_message,omitempty"`
	SessionFeedback   string         `json:"session_feedback,omitempty"`
}

// AppendTraceRequest is a trace step. OriginFunction and Status are
// required; TraceID is a UUID when empty; strings are stored stripped, the
// text fields default to "" and MethodParams to {}.
type AppendTraceRequest struct {
	TraceID           string         `json:"trace_id,omitempty"`
	OriginFunction    string         `json:"origin_function"`
	Status            string         `json:"status"`
	MemoryQuery       string         `json:"memory_query,omitempty"`
	MemoryContext     string         `json:"memory_context,omitempty"`
	MethodParams      map[string]any `json:"method_params,omitempty"`
	MethodReturnValue any            `json:"method_return_value,omitempty"`
	ErrorMessage      string         `json:"error_message,omitempty"`
	SessionFeedback   string         `json:"session_feedback,omitempty"`
}

// ContextEntry is a session-context entry: any JSON object with a string
// "id". Numbers decode as float64.
type ContextEntry map[string]any

// ID is the entry's "id" ("" when absent or not a string).
func (e ContextEntry) ID() string {
	id, _ := e["id"].(string)
	return id
}

// ContextResult is the answer to AppendContext: the stored entry, and
// whether this call stored it (201) or the session already held its id
// (200: nothing was written and the entry is the one stored before).
type ContextResult struct {
	ContextEntry
	Created bool
}

// TTL is a session's remaining time to live.
type TTL struct {
	TTLSeconds int64 `json:"ttl_seconds"` // -1: no expiry
}

// SessionStatus is a session's (derived) status.
type SessionStatus string

// The statuses. Abandoned is never stored: a running session idle longer
// than SESSION_ABANDON_AFTER_SECONDS reads as abandoned.
const (
	StatusRunning   SessionStatus = "running"
	StatusAbandoned SessionStatus = "abandoned"
	StatusCompleted SessionStatus = "completed"
	StatusFailed    SessionStatus = "failed"
)

// SessionRecord is a session's lifecycle and usage record. Times are from
// Redis TIME (UTC); nil when unknown.
type SessionRecord struct {
	UserID         string                `json:"user_id"`
	SessionID      string                `json:"session_id"`
	Status         SessionStatus         `json:"status"`
	StoredStatus   SessionStatus         `json:"stored_status"` // never abandoned
	StartedAt      *time.Time            `json:"started_at"`
	LastActivityAt *time.Time            `json:"last_activity_at"`
	EndedAt        *time.Time            `json:"ended_at"`
	TokensIn       int64                 `json:"tokens_in"`
	TokensOut      int64                 `json:"tokens_out"`
	CostUSD        float64               `json:"cost_usd"`
	Calls          int64                 `json:"calls"`
	ErrorCount     int64                 `json:"error_count"`
	LastModel      *string               `json:"last_model"`
	EntryCount     int64                 `json:"entry_count"`
	Models         map[string]ModelUsage `json:"models"` // usage per model name as posted
	// TTLSeconds is the remaining TTL (-1: no expiry), only in answers about
	// one session (GetSession, CompleteSession, FailSession), nil in lists.
	TTLSeconds *int64 `json:"ttl_seconds,omitempty"`
	// DerivedFromList is true when only Cognee wrote the session: no
	// record; entry count and last activity come from its list.
	DerivedFromList bool `json:"derived_from_list,omitempty"`

	Title                *string           `json:"title"`
	Metadata             map[string]string `json:"metadata"` // {} when none
	ParentSessionID      *string           `json:"parent_session_id"`
	Summary              *string           `json:"summary"`
	SummaryAutoGenerated bool              `json:"summary_auto_generated"`
	// EndReason: completed, failed, split or auto_closed; nil while running.
	EndReason    *string `json:"end_reason"`
	MessageCount int64   `json:"message_count"`
	// AbortRequestedAt is when an abort was requested (RequestAbort), nil
	// when none is pending.
	AbortRequestedAt *string `json:"abort_requested_at"`
	// Created is true when CreateSession created the session now (false:
	// a retry with the same Idempotency-Key).
	Created bool `json:"-"`
}

// CreateSessionRequest creates a session with a title and metadata. Without
// SessionID the sidecar picks a lowercase UUID (derived from the
// Idempotency-Key when one is sent).
type CreateSessionRequest struct {
	SessionID string            `json:"session_id,omitempty"`
	Title     *string           `json:"title,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	State     json.RawMessage   `json:"state,omitempty"` // a JSON object
}

// UpdateSessionRequest changes a session's title and merges Metadata into
// its metadata as a JSON merge patch: a nil value removes that key,
// Null removes every key.
type UpdateSessionRequest struct {
	Title    Nullable[string]             `json:"title,omitzero"`
	Metadata Nullable[map[string]*string] `json:"metadata,omitzero"`
}

// EndSessionRequest is the optional body of complete and fail.
type EndSessionRequest struct {
	Summary *string `json:"summary,omitempty"`
}

// ModelUsage is a session's usage of one model.
type ModelUsage struct {
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	CostUSD   float64 `json:"cost_usd"`
}

// SessionList is one page of sessions, most recently active first.
type SessionList struct {
	Sessions []SessionRecord `json:"sessions"`
	// NextCursor is the Cursor of the next page; "" on the last page.
	NextCursor string `json:"next_cursor"`
}

// ListSessionsOptions filter and page ListSessions and ListUserSessions.
// Zero values take the sidecar's defaults.
type ListSessionsOptions struct {
	Status SessionStatus // only this status; "" = all
	Limit  int           // page size, 1-500; 0 = 50
	Cursor string        // NextCursor of the previous page; "" = first page
	// Metadata keeps the sessions whose metadata holds every pair (sent as
	// metadata.<key>=<value>). Such a page may hold fewer than Limit
	// sessions and still have a NextCursor.
	Metadata map[string]string
}

// UsageRequest is one LLM call. Explicit token counts win over the estimate
// len(text) // 4 from InputText/OutputText; an explicit CostUSD wins over
// the price table.
type UsageRequest struct {
	Model      string   `json:"model"`
	TokensIn   *int64   `json:"tokens_in,omitempty"`
	TokensOut  *int64   `json:"tokens_out,omitempty"`
	CostUSD    *float64 `json:"cost_usd,omitempty"`
	InputText  string   `json:"input_text,omitempty"`  // only for the estimate; never stored
	OutputText string   `json:"output_text,omitempty"` // only for the estimate; never stored
	Error      bool     `json:"error,omitempty"`       // the call failed
	// RequestID is the same as WithIdempotencyKey (send one, or both equal).
	RequestID string `json:"request_id,omitempty"`
}

// UsageResult is what a usage post counted. Created is false when the
// idempotency key was seen before: the call counted nothing and this is the
// first call's result (200 instead of 201).
type UsageResult struct {
	Model           string  `json:"model"`
	PricedAs        *string `json:"priced_as"` // the price-table entry that matched; nil when none did
	TokensIn        int64   `json:"tokens_in"`
	TokensOut       int64   `json:"tokens_out"`
	TokensEstimated bool    `json:"tokens_estimated"`
	CostUSD         float64 `json:"cost_usd"`
	CostSource      string  `json:"cost_source"` // explicit, price_table or unknown_model
	Error           bool    `json:"error"`
	Created         bool    `json:"-"`
}

// SessionStats are the sessions in Redis by status now, and all-time usage
// (deleted sessions included).
type SessionStats struct {
	Sessions  SessionCounts `json:"sessions"`
	TokensIn  int64         `json:"tokens_in"`
	TokensOut int64         `json:"tokens_out"`
	CostUSD   float64       `json:"cost_usd"`
	Calls     int64         `json:"calls"`
	Errors    int64         `json:"errors"`
	// SuccessRate is completed / (completed + failed); nil when none ended.
	SuccessRate *float64 `json:"success_rate"`
}

// SessionCounts count sessions by status.
type SessionCounts struct {
	Running   int64 `json:"running"`
	Abandoned int64 `json:"abandoned"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	Total     int64 `json:"total"`
}

// CostByModel is all-time usage per model name, most expensive first.
type CostByModel struct {
	Models []ModelTotals `json:"models"`
}

// ModelTotals is the all-time usage of one model name.
type ModelTotals struct {
	Model     string  `json:"model"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	CostUSD   float64 `json:"cost_usd"`
	Calls     int64   `json:"calls"`
	Errors    int64   `json:"errors"`
}

// AcquireLockRequest asks for a lock. Zero values take the defaults: no
// owner, AGENTIC_LOCK_EXPIRE, no wait.
type AcquireLockRequest struct {
	Owner  string `json:"owner,omitempty"`   // for humans; at most 256 bytes
	TTLMs  int64  `json:"ttl_ms,omitempty"`  // 1-86400000
	WaitMs int64  `json:"wait_ms,omitempty"` // up to AGENTIC_LOCK_TIMEOUT x 1000
}

// RefreshLockRequest renews a lock held with Token, for TTLMs (0 = the TTL
// it was acquired with).
type RefreshLockRequest struct {
	Token string `json:"token"`
	TTLMs int64  `json:"ttl_ms,omitempty"`
}

// releaseLockRequest is the body of ReleaseLock.
type releaseLockRequest struct {
	Token string `json:"token"`
}

// lockReleased is the answer of ReleaseLock.
type lockReleased struct {
	Released bool `json:"released"`
}

// LockGrant is a held lock: the answer to AcquireLock and RefreshLock.
type LockGrant struct {
	Token        string    `json:"token"`         // refreshes and releases it: keep it secret
	FencingToken int64     `json:"fencing_token"` // strictly increasing per name: check it in the resource
	Owner        string    `json:"owner"`
	ExpiresAt    time.Time `json:"expires_at"` // by Redis's clock; trust TTLMs for how long you have
	TTLMs        int64     `json:"ttl_ms"`
	// Replicated is set when the sidecar runs with
	// SIDECAR_LOCK_REPLICA_WAIT_MS: whether a replica acknowledged the grant.
	Replicated *bool `json:"replicated,omitempty"`
}

// LockInfo is InspectLock's answer. Owner, TTLMs and FencingToken are set
// only while held (redis-py holders have no owner or fencing token).
type LockInfo struct {
	Held         bool   `json:"held"`
	Owner        string `json:"owner,omitempty"`
	TTLMs        int64  `json:"ttl_ms,omitempty"` // -1: no expiry
	FencingToken int64  `json:"fencing_token,omitempty"`
}

// StartSessionRequest starts or reuses the user's active session: Match
// selects the candidates (nil: every running session); Title and Metadata
// go to a new session only.
type StartSessionRequest struct {
	Title    *string           `json:"title,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Match    map[string]string `json:"match,omitempty"`
}

// SessionStart is what start-or-reuse did.
type SessionStart struct {
	SessionID       string           `json:"session_id"`
	IsNew           bool             `json:"is_new"`
	Closed          []string         `json:"closed"`
	SessionsContext []SessionContext `json:"sessions_context"`
	// Recent holds the newest items, newest first: each the stored item
	// with "kind" ("entry" or "message") and "session_id".
	Recent []map[string]any `json:"recent"`
}

// SessionContext is a recently ended session of the user.
type SessionContext struct {
	SessionID            string     `json:"session_id"`
	Title                *string    `json:"title"`
	Summary              *string    `json:"summary"`
	SummaryAutoGenerated bool       `json:"summary_auto_generated"`
	StartedAt            *time.Time `json:"started_at"`
	EndedAt              *time.Time `json:"ended_at"`
}

// EndActiveSessionRequest is the optional body of EndActiveSession.
type EndActiveSessionRequest struct {
	Summary *string           `json:"summary,omitempty"`
	Match   map[string]string `json:"match,omitempty"`
}

// Erasure is the answer of EraseUser: Erased, or an estimate of the
// sessions left.
type Erasure struct {
	Erased    bool   `json:"erased"`
	Remaining *int64 `json:"remaining,omitempty"`
}
