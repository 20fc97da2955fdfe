// Package client is the Go client of the sidecar's /v1 API: session memory
// in Cognee's shapes (Q&A entries, feedback, search, traces, context), TTLs,
// usage and the session lifecycle, the session registry and state,
// messages, context blocks and tools, live events, LangGraph checkpoints,
// Google ADK sessions, a user's erasure, and locks, with a Lease that
// refreshes a lock in the background.
//
// Every operation of openapi/openapi.json is one method, named after its
// operationId (appendEntry → AppendEntry), taking a context first:
//
//	c := client.New("http://127.0.0.1:7480", client.WithBearerToken(os.Getenv("SIDECAR_API_TOKEN")))
//	res, err := c.AppendEntry(ctx, "alice", "chat-1", client.AppendEntryRequest{
//		QAID: "q1", Question: "Where is the dog?", Answer: "In the garden",
//	})
//	// res.Created is false when the session already held q1 (a safe retry).
//	entries, err := c.ListEntries(ctx, "alice", "chat-1", 10)
//
// A non-2xx answer is an *Error with the HTTP status, the envelope's code
// and message, and Retry-After; IsNotFound, IsConflict and IsUnavailable
// test for the usual cases, and errors.Is matches the lock errors (ErrHeld,
// ErrLost, ErrNotHeld, ErrNotOwner) and ErrSessionEnded. Nothing is retried
// for you.
//
// GetSessionEvents and GetUserEvents stream live events as an iterator that
// reconnects by itself with Last-Event-ID.
//
// Acquire takes a lock and returns a Lease that refreshes it until Release
// and reports its loss on Done, Err and Context:
//
//	lease, err := c.Acquire(ctx, "graph-writes", client.LeaseOptions{Wait: time.Minute})
//	if err != nil { ... }                  // errors.Is(err, client.ErrHeld): not acquired within Wait
//	defer lease.Release(context.Background())
//	ctx, cancel := lease.Context(ctx)      // cancelled if the lease is lost
//	defer cancel()
//	write(ctx, lease.Fence)                // pass the fencing token to the resource
//
// Files:
//   - client.go: Client, New and its options, the request plumbing (paths,
//     bodies, answers, ErrBadID).
//   - errors.go: Error, IsNotFound, IsConflict, IsUnavailable, the lock
//     errors and ErrSessionEnded.
//   - types.go: the sessions', usage's and registry's schemas (entries,
//     traces, context, TTL, SessionRecord), Nullable.
//   - sessions.go: Q&A entries, feedback, search, traces, context, TTL,
//     session delete.
//   - usage.go: usage posts (WithIdempotencyKey), complete and fail, the
//     session listings and their iterators, stats, cost by model.
//   - registry.go: create, update and start-or-reuse of sessions, session
//     and user state, EraseUser.
//   - messages.go, messages_types.go: messages, history transactions, fork
//     and split, compactions, the user-wide search.
//   - blocks.go, blocks_types.go: context blocks, the system prompt, tools.
//   - events.go, events_types.go: the live event streams (reconnecting
//     iterators), custom events, abort requests.
//   - checkpoints.go, checkpoints_types.go: LangGraph checkpoints.
//   - adk.go, adk_types.go: Google ADK sessions.
//   - locks.go: the lock routes, one call each.
//   - lease.go: Acquire and Lease, a lock refreshed in the background.
//
// Tests: client_test.go calls every operation against a sidecar on a real
// Redis (with blocks_test.go and messages_test.go), errors, bad ids, the
// token, an outage and redirects; internal_test.go that every operation has
// its method and every type matches its schema in openapi/openapi.json, error
// matching, Nullable; events_test.go reconnection; lease_test.go refresh,
// loss and release; example_test.go the examples; main_test.go shares one
// Redis.
package client
