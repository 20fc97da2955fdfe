// Package blocks is the context-blocks module (docs/blocks.md): labelled,
// size-bounded parts of an agent's system prompt, kept per user (every
// session of the user) and per session (a session block overrides the user
// block of the same label); the system prompt rendered from them
// (Cloudflare's context-block format, byte for byte), optionally frozen so
// a provider's prompt cache keeps hitting; and tools an LLM calls to update
// them (set_context), search them (search_context) or search the user's
// past sessions (session_search), defined in OpenAI's and Anthropic's
// shapes and served to any MCP client by each session's Model Context
// Protocol server (mcp.go, docs/mcp.md).
//
// Every write is one script (blocks_*.lua) over the shared session runner
// (sessionstore): a session block is one of the session's keys, slid,
// persisted and deleted with it; a user's blocks key is slid by every block
// write. A block keeps its token counts (tokens.Counts), so an append's
// estimate follows from the stored counts and the piece's, in Lua. A freeze
// stores the prompt only while the blocks are as read (their digest).
//
// Files:
//   - blocks.go: Factory, Config (BLOCKS_MAX_PER_USER,
//     BLOCKS_MAX_PER_SESSION, BLOCKS_MAX_CONTENT_BYTES), the module and its
//     routes.
//   - block.go: a block (scopes, validation, prompt order) and the block
//     handlers.
//   - prompt.go: Render, GET .../system-prompt (text or JSON, frozen) and
//     its refresh.
//   - tools.go: the tools (definitions in both shapes, POST .../tools/{name};
//     a model's mistakes are is_error results, not 400s).
//   - session_search.go: the session_search tool over search.Index.Find.
//   - mcp.go: every session an MCP server (Streamable HTTP, stateless, the
//     official Go SDK): the same tools, the system prompt as a prompt and a
//     resource, the blocks as resources.
//   - metrics.go: the MCP requests and tool calls by outcome.
//   - store.go: Store, the module's scripts and reads.
//   - keys.go: the module's families (session blocks, frozen prompt, tool
//     calls; user blocks).
//   - scripts.go: embeds and registers the scripts and their library.
//   - blocks.lua: the library: blocks.open, pcall reads refusing another
//     type, commit and finish, token counts, the digest, the ring of tool
//     call ids.
//   - blocks_put.lua, blocks_set.lua, blocks_delete.lua, blocks_read.lua,
//     blocks_freeze.lua: create or replace, append or replace content (and
//     set_context), delete, read with the digest, freeze or refresh.
//
// Tests: blocks_test.go and integrity_test.go run the routes on every
// backend (CRUD, the merged view, bad input, wrong-typed and hand-written
// keys); prompt_test.go the golden prompt bytes and frozen prompts;
// tools_test.go and session_search_test.go the tools' shapes and results;
// concurrency_test.go concurrent appends and freezes, script token counts
// equal to tokens.Estimate; events_test.go the live events; cost_test.go a
// write's Redis commands; mcp_test.go the MCP server through the Go SDK's
// client (two pods, errors, deadlines); bench_test.go benchmarks.
package blocks
