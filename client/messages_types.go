package client

import "encoding/json"

// Messages (module messages): the document's message schemas.

// Message is a stored message (schema Message). Optional fields are nil
// when they were not sent. Created is true when the call that answered it
// stored it now (false: a retry, nothing written; or a read).
type Message struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    *string         `json:"content,omitempty"`
	Parts      []any           `json:"parts,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID *string         `json:"tool_call_id,omitempty"`
	Item       json.RawMessage `json:"item,omitempty"` // the bytes as sent
	Format     *string         `json:"format,omitempty"`
	Model      *string         `json:"model,omitempty"`
	TokenCount *int64          `json:"token_count,omitempty"`
	Metadata   map[string]any  `json:"metadata,omitempty"`
	ParentID   *string         `json:"parent_id"` // nil for a root
	CreatedAt  string          `json:"created_at"`
	Tokens     int64           `json:"tokens"`
	// Compaction is set only on the synthetic message ("compaction:<id>")
	// that stands for a compacted range on a path.
	Compaction CompactionRef `json:"compaction,omitzero"`

	Created bool `json:"-"`
}

// ToolCall is one call of a message's tool_calls.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// MessageInput is a message to store (schema MessageInput). ID "" lets the
// sidecar choose a UUIDv7. ParentID unset: the latest leaf; Null: a new
// root; Set(id): that message.
type MessageInput struct {
	ID         string           `json:"id,omitempty"`
	Role       string           `json:"role"`
	Content    *string          `json:"content,omitempty"`
	Parts      []any            `json:"parts,omitempty"`
	ToolCalls  []ToolCall       `json:"tool_calls,omitempty"`
	ToolCallID *string          `json:"tool_call_id,omitempty"`
	Item       json.RawMessage  `json:"item,omitempty"`
	Format     *string          `json:"format,omitempty"`
	Model      *string          `json:"model,omitempty"`
	TokenCount *int64           `json:"token_count,omitempty"`
	Metadata   map[string]any   `json:"metadata,omitempty"`
	ParentID   Nullable[string] `json:"parent_id,omitzero"`
}

// MessageBatch is several messages chained in order (schema MessageBatch).
type MessageBatch struct {
	Messages []MessageInput `json:"messages"`
}

// MessageList is {messages} (schema MessageList).
type MessageList struct {
	Messages []Message `json:"messages"`
}

// MessagePage is a page of a path (schema MessagePage).
type MessagePage struct {
	Messages            []Message `json:"messages"`
	Total               int64     `json:"total"`
	TotalTokens         int64     `json:"total_tokens"`
	NextCursor          *string   `json:"next_cursor"`
	CompactionSuggested bool      `json:"compaction_suggested"`
}

// MessagePatch replaces the fields set (schema MessagePatch); Null removes
// one.
type MessagePatch struct {
	Content    Nullable[string]          `json:"content,omitzero"`
	Parts      Nullable[[]any]           `json:"parts,omitzero"`
	Item       Nullable[json.RawMessage] `json:"item,omitzero"`
	Format     Nullable[string]          `json:"format,omitzero"`
	Metadata   Nullable[map[string]any]  `json:"metadata,omitzero"`
	TokenCount Nullable[int64]           `json:"token_count,omitzero"`
}

// PathOptions selects a page of a path (listMessages). Zero values are the
// defaults: the latest leaf, root first, 50 messages.
type PathOptions struct {
	Leaf   string
	Desc   bool
	Limit  int
	After  string // a message of the path: the page starts after it
	Before string // a message of the path: the page ends before it
	Offset int
	Raw    bool // compacted=false
}

// ForkSessionRequest forks a session at a message (schema
// ForkSessionRequest). SessionID "" lets the sidecar choose.
type ForkSessionRequest struct {
	At        string  `json:"at"`
	SessionID string  `json:"session_id,omitempty"`
	Title     *string `json:"title,omitempty"`
}

// SplitSessionRequest ends a session with a summary and starts its
// continuation (schema SplitSessionRequest).
type SplitSessionRequest struct {
	Summary   string  `json:"summary"`
	SessionID string  `json:"session_id,omitempty"`
	Title     *string `json:"title,omitempty"`
}

// CompactionRef names a compaction and its range.
type CompactionRef struct {
	ID     string `json:"id"`
	FromID string `json:"from_id"`
	ToID   string `json:"to_id"`
}

// Compaction is a compaction in force (schema Compaction).
type Compaction struct {
	ID        string `json:"id"`
	Summary   string `json:"summary"`
	FromID    string `json:"from_id"`
	ToID      string `json:"to_id"`
	CreatedAt string `json:"created_at"`
}

// CompactionRequest compacts FromID..ToID into Summary (schema
// CompactionRequest).
type CompactionRequest struct {
	Summary string `json:"summary"`
	FromID  string `json:"from_id"`
	ToID    string `json:"to_id"`
}

// CompactionList is {compactions} (schema CompactionList).
type CompactionList struct {
	Compactions []Compaction `json:"compactions"`
}

// SearchResult is one document found (schema SearchResult). SessionID is
// set by a user search.
type SearchResult struct {
	SessionID string  `json:"session_id,omitempty"`
	Kind      string  `json:"kind"`
	ID        string  `json:"id"`
	Snippet   string  `json:"snippet"`
	Score     float64 `json:"score"`
	Time      string  `json:"time"`
}

// SearchResults is {results, index?, index_covered_since?} (schema
// SearchResults).
type SearchResults struct {
	Results []SearchResult `json:"results"`
	// Index is "building" while the user's index is being built
	// (SEARCH_INDEX=on-demand: the first relevance search builds it, newest
	// sessions first): the results are partial. Empty once built.
	Index string `json:"index,omitempty"`
	// IndexCoveredSince, with Index "building" on the user's search: the
	// sessions active at or after it are covered, older ones not yet.
	IndexCoveredSince string `json:"index_covered_since,omitempty"`
}

// MessageTransaction is one atomic, idempotent history transaction on the
// latest path (schema MessageTransaction): Type is append_items,
// replace_suffix, replace_function_call or replace_history; the fields each
// takes are those of applyMessageTransaction. Messages and ExpectedSuffix
// are sent when not nil: an empty replacement is an empty, non-nil slice.
type MessageTransaction struct {
	OperationID    string               `json:"operation_id"`
	Type           string               `json:"type"`
	Messages       []MessageInput       `json:"messages,omitzero"`
	ExpectedSuffix []MessageInput       `json:"expected_suffix,omitzero"`
	CallID         string               `json:"call_id,omitempty"`
	Message        *MessageInput        `json:"message,omitempty"`
	Replacements   []MessageReplacement `json:"replacements,omitempty"`
	// ExpectedLeaf (replace_history): the id of the latest message read
	// ("" for an empty history); nil sends none
	ExpectedLeaf *string `json:"expected_leaf,omitempty"`
	// Part and More (append_items sent in parts): this part's number (0,
	// 1, ...; nil: not in parts) and whether more parts follow; each part
	// but the last answers 202 with Staged, the last makes all visible
	Part *int `json:"part,omitempty"`
	More bool `json:"more,omitempty"`
}

// MessageReplacement is one replace_function_call of a transaction's
// Replacements: the message holding call CallID becomes Message.
type MessageReplacement struct {
	CallID  string       `json:"call_id"`
	Message MessageInput `json:"message"`
}

// MessageTransactionResult is a transaction's answer (schema
// MessageTransactionResult): Applied is false for a repeat of the same
// operation, which wrote nothing.
type MessageTransactionResult struct {
	OperationID string    `json:"operation_id"`
	Applied     bool      `json:"applied"`
	Messages    []Message `json:"messages"`
	// Staged: a part staged (202), the operation's messages staged so far
	Staged int `json:"staged,omitempty"`
}
