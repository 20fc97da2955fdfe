package blocks

import "github.com/agentsidecar/agentsidecar/redisstore"

// The module's key families: context blocks, the frozen system prompt, the
// tool calls answered. The session's three are session families: the
// session core (lua/lib/session.lua) slides and deletes them with the
// session's other keys once the session has them (a write of the family
// adds it to the record's fams). The user's blocks key is the user's.
var (
	// SessionBlocksFamily: a session's context blocks, a hash label -> the
	// block (a JSON object). It holds nothing but blocks, so copying a
	// session's blocks to another session of the same user (same slot) is
	// a copy of this one key.
	SessionBlocksFamily = redisstore.Owner("blocks").Session("session blocks", "agent_session_blocks", "b", redisstore.KindHash, "a session's context blocks: label → the block (a JSON object); nothing else, so a fork copies the key")
	// PromptFamily: a session's frozen system prompt, a hash with fields
	// prompt (the text), tokens (its estimate) and frozen_at (Redis TIME,
	// µs).
	PromptFamily = redisstore.Owner("blocks").Session("frozen prompt", "agent_session_prompt", "p", redisstore.KindHash, "a session's frozen system prompt: `prompt`, `tokens`, `frozen_at` (µs), kept until `POST .../system-prompt/refresh`")
	// ToolCallsFamily: a session's memory of the tool calls that wrote, a
	// hash tool_call_id -> the first result, keeping the 1 000 newest ids
	// (a ring in fields " n" and " <i>").
	ToolCallsFamily = redisstore.Owner("blocks").Session("tool calls", "agent_session_tool_calls", "tc", redisstore.KindHash, "`tool_call_id` → the first result of a tool call that wrote, the 1 000 newest ids, so a retried call writes once")
	// UserBlocksFamily: a user's context blocks, applying to every session
	// of the user, a hash label -> the block. It expires
	// SESSION_TTL_SECONDS after the last block write of the user (a user
	// or session block, a tool call that wrote, a frozen prompt stored).
	UserBlocksFamily = redisstore.Register(redisstore.Family{
		Name: "user blocks", Prefix: "agent_user_blocks", Scope: redisstore.ScopeUser,
		Kind: redisstore.KindHash, Owner: "blocks", TTL: redisstore.RetentionTTL,
		Reason:      "`SESSION_TTL_SECONDS` from the user's last block write (a user or session block, a tool call that wrote, a frozen prompt stored)",
		Description: "a user's context blocks, applying to every session of the user: label → the block (a JSON object)",
	})
)
