package checkpoints

import "github.com/agentsidecar/agentsidecar/redisstore"

// The module's key families, both session families: a thread is a
// session, so its checkpoints slide with the session's TTL, are deleted
// with it (DELETE /v1/users/{u}/sessions/{s}) and by the user's erasure,
// without a line of stock code naming them (the core knows them by their
// codes in the record's fams: lua/keys.go). checkpoints.lua (the
// scripts' library) describes their fields and members.
var (
	// HashFamily: a thread's checkpoints, metadata, channel versions,
	// channel values and pending writes, one hash.
	HashFamily = redisstore.Owner("checkpoints").Session("checkpoints", "agent_checkpoints", "k", redisstore.KindHash, "a LangGraph thread's checkpoints, their metadata and channel versions, channel values by version, pending writes (fields `c`/`m`/`v`/`b`/`w` + `\\0`-joined names, `#values` their count); at most `CHECKPOINTS_MAX_PER_THREAD` checkpoint ids and 100 times as many values")
	// OrderFamily: the same thread's order, a zset read by lex range:
	// checkpoints by namespace and id, by id across namespaces, writes in
	// LangGraph's (task_path, task_id, idx) order.
	OrderFamily = redisstore.Owner("checkpoints").Session("checkpoint order", "agent_checkpoint_order", "ko", redisstore.KindZSet, "a LangGraph thread's checkpoints newest first by namespace and across namespaces, each checkpoint's pending writes in order, and the ids holding writes but not stored (every score 0, read by lex range)")
)
