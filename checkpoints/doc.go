// Package checkpoints is the LangGraph checkpoints module
// (docs/checkpoints.md): a thread's checkpoints, their metadata, channel
// values by version and pending writes, kept as a LangGraph checkpoint
// saver keeps them, for the TypeScript client's SidecarCheckpointSaver
// (@agentsidecar/client/langgraph).
//
// A thread is a session: user = the saver's userId, session = the thread_id
// (the client encodes one session ids refuse). Its keys are two session
// families (keys.go), so checkpoints slide with the session's TTL, show in
// its record and metrics, and go with the session's delete and the user's
// erasure. Each put and each putWrites is one script with the session's
// bookkeeping and its event. The sidecar never decodes what the saver
// serialized: checkpoints, channel values and writes are {type, data}
// pairs, data the base64 of the serde's bytes. Metadata is JSON, so lists
// filter on it (in Go, each match one read, the answer capped).
//
// Files:
//   - checkpoints.go: Factory, Config (CHECKPOINTS_MAX_PER_THREAD, and the
//     host's SESSION_MAX_ITEM_BYTES, SIDECAR_MAX_MESSAGE_BODY_BYTES,
//     SIDECAR_MAX_ANSWER_BYTES), the module and its routes (put, writes,
//     tuple, list).
//   - handlers.go: the bodies and their bounds (Blob, ChannelValue, Write),
//     the handlers, the metadata filter.
//   - store.go: Store: Put, PutWrites, Read, List (pages of ids and
//     metadata, next_before).
//   - keys.go: the two session families (agent_checkpoints hash,
//     agent_checkpoint_order lex zset).
//   - scripts.go: embeds and registers the scripts and their library.
//   - checkpoints.lua: the library: field and member names, ranges, reads
//     refusing another type.
//   - checkpoints_put.lua: a checkpoint (an upsert; checkpoints_full).
//   - checkpoints_writes.lua: a task's pending writes, by LangGraph's
//     rules.
//   - checkpoints_read.lua: one checkpoint, by id or newest, with its values
//     and writes (checkpoint_too_large).
//   - checkpoints_list.lua: a page of ids and metadata, newest first.
//
// Tests: checkpoints_test.go runs every route on miniredis, a real Redis
// and a cluster (put, read, carry-over, writes and retries, lists and
// filters, caps, refusals writing nothing, concurrent writers, TTLs and
// delete); cost_test.go a write's Redis commands; bench_test.go benchmarks.
// The client's side is in clients/typescript (langgraph tests).
package checkpoints
