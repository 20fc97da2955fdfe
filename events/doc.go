// Package events is the live events module (docs/events.md): every write of
// a session appends its event to the session's Redis Stream in the write's
// own script (lua/lib/events.lua's emit), and this module serves them as
// Server-Sent Events (GET .../events, GET /v1/users/{user_id}/events),
// replays them after a client's last id (Last-Event-ID or ?after=, with a
// reconnected {gap, oldest_id} frame), publishes callers' own x-<name>
// events, and records abort requests (POST and DELETE .../abort).
//
// One reader per sidecar (hub.go) fans the streams out to every subscriber
// of this sidecar: it reads each watched stream after its last delivered id
// with pipelined XRANGEs, woken by the stream's own Pub/Sub channel
// (sidecar:events:<stream key>) on one Pub/Sub connection per sidecar, and
// reads every watched stream again each heartbeat; subscribers more than
// MaxLag behind are dropped. With SESSION_EVENTS=watched (the default) the
// writes record events only while a reader on some pod keeps the stream's
// watch marker fresh; a lapsed marker ends its streams.
//
// Files:
//   - events.go: Factory, the module, its routes and handlers.
//   - config.go: Config (SIDECAR_SSE_HEARTBEAT, SIDECAR_SSE_MAX_STREAMS,
//     SESSION_EVENTS_GRACE_SECONDS) and fixed bounds (MaxLag,
//     MaxDataBytes).
//   - hub.go: the one reader: watched streams, wake-ups, per-subscriber
//     buffers, the watch marks set and refreshed.
//   - subscribe.go: the sidecar's one Pub/Sub connection, reconciled to the
//     channels of the watched streams, resubscribed with backoff after a
//     loss.
//   - stream.go: one SSE connection: retry, reconnected and replay, live
//     events once each in id order, keepalives, write deadlines.
//   - id.go: ID, a stream id.
//   - store.go: Store: custom events and abort over the shared runner,
//     stream reads (replay page, last id, gap).
//   - keys.go: the module's families (the custom events' Idempotency-Key
//     ring; the session's watch field of the user's marker and the user's
//     watch key).
//   - metrics.go: sidecar_events_* of one host.
//   - scripts.go: embeds and registers the scripts below.
//   - events_custom.lua: a caller's x-<name> event, idempotent by key.
//   - events_abort.lua: set or clear the record's abort request.
//   - events_watch.lua: a reader's watch mark of a stream.
//
// Tests: emit_test.go holds that every write emits exactly one event
// (refused and repeated ones none), truncation and the stream's TTL;
// stream_test.go and frame_test.go SSE live, refusals, two hosts, gaps,
// restarts, 100 subscribers, shutdown, the stream cap, an outage mid-stream,
// no leaks; watch_test.go recording while watched across pods and the
// grace; channels_test.go and hub_internal_test.go the channels by PUBSUB
// (per watched stream, churn, ACL) and slow subscribers dropped;
// idempotency_test.go, config_test.go and cost_test.go custom events'
// keys, settings and Redis commands; bench_test.go BenchmarkCrossPod.
package events
