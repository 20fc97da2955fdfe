package redisstore

// Keys of the blocks module (context blocks, the frozen system prompt, the
// tool calls answered). The session scripts derive the session's three from
// the record key's tag (lua/session_lib.lua), so they slide, persist and
// are deleted with the session's other keys; the user's blocks key is
// derived the same way (lua/blocks_lib.lua). These builders give the same
// names to Go readers and tests.

// SessionBlocks is a session's context blocks: agent_session_blocks:
// <tag><u>:<s>, a hash label -> the block (a JSON object). It holds nothing
// but blocks, so copying a session's blocks to another session of the same
// user (same slot) is a copy of this one key.
func (l Layout) SessionBlocks(user, session string) string {
	return "agent_session_blocks:" + l.tag(l.Bucket(user)) + user + ":" + session
}

// SessionPrompt is a session's frozen system prompt: agent_session_prompt:
// <tag><u>:<s>, a hash with fields prompt (the text), tokens (its
// estimate) and frozen_at (Redis TIME, µs).
func (l Layout) SessionPrompt(user, session string) string {
	return "agent_session_prompt:" + l.tag(l.Bucket(user)) + user + ":" + session
}

// SessionToolCalls is a session's memory of the tool calls that wrote:
// agent_session_tool_calls:<tag><u>:<s>, a hash tool_call_id -> the first
// result, keeping the 1 000 newest ids (a ring in fields " n" and " <i>").
func (l Layout) SessionToolCalls(user, session string) string {
	return "agent_session_tool_calls:" + l.tag(l.Bucket(user)) + user + ":" + session
}

// UserBlocks is a user's context blocks, applying to every session of the
// user: agent_user_blocks:<tag><u>, a hash label -> the block. It expires
// SESSION_TTL_SECONDS after the last block write of the user (a user or
// session block, a tool call that wrote, a frozen prompt stored).
func (l Layout) UserBlocks(user string) string {
	return "agent_user_blocks:" + l.tag(l.Bucket(user)) + user
}
