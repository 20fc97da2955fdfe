package client

import (
	"encoding/json"
	"time"
)

// Context blocks, the system prompt and the tools of a session (module
// blocks): the schemas of openapi/openapi.json.

// Block is a context block. Scope is "user" (applies to every session of
// the user) or "session" (overrides the user block of its label).
type Block struct {
	Label       string    `json:"label"`
	Scope       string    `json:"scope"`
	Description *string   `json:"description"`
	Content     string    `json:"content"`
	MaxTokens   *int      `json:"max_tokens"` // nil: no limit
	Writable    bool      `json:"writable"`
	Position    int       `json:"position"`
	Tokens      int       `json:"tokens"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Created: PutUserBlock/PutSessionBlock created the block (201); false
	// when they replaced one (200).
	Created bool `json:"-"`
}

// PutBlockRequest is a block to create or replace. Nil pointers take the
// defaults: no description, no max_tokens, writable, position 0.
type PutBlockRequest struct {
	Content     string  `json:"content"`
	Description *string `json:"description,omitempty"`
	MaxTokens   *int    `json:"max_tokens,omitempty"`
	Writable    *bool   `json:"writable,omitempty"`
	Position    *int    `json:"position,omitempty"`
}

// AppendBlockRequest is the text to add at the end of a block.
type AppendBlockRequest struct {
	Content string `json:"content"`
}

// BlockList is a listing of blocks, in prompt order.
type BlockList struct {
	Blocks []Block `json:"blocks"`
}

// SystemPrompt is the rendered prompt with its token estimate; FrozenAt is
// nil for a live rendering.
type SystemPrompt struct {
	Prompt   string     `json:"prompt"`
	Tokens   int        `json:"tokens"`
	FrozenAt *time.Time `json:"frozen_at"`
}

// ToolList holds tool definitions in a provider's shape, to pass to the
// model as they are.
type ToolList struct {
	Tools []json.RawMessage `json:"tools"`
}

// ToolCallRequest is a tool call a model made. Arguments is an object
// (Anthropic's input, e.g. a map or json.RawMessage) or the JSON string
// the model produced (OpenAI's function.arguments).
type ToolCallRequest struct {
	Arguments  any    `json:"arguments"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolResult is the text to give the model; IsError when the call did
// nothing because of its arguments or the block.
type ToolResult struct {
	Result  string `json:"result"`
	IsError bool   `json:"is_error"`
}

// Tool formats of ListTools.
const (
	ToolFormatOpenAI    = "openai"
	ToolFormatAnthropic = "anthropic"
)
