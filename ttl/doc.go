// Package ttl is the ttl module (docs/sessions.md, "TTL"): GET and PUT
// /v1/users/{user_id}/sessions/{session_id}/ttl read a session's remaining
// TTL and give it its own (0 = no expiry, at most MaxTTLSeconds), applied
// to every key of the session at once, whichever module wrote it, by the
// shared session store (sessionstore.Store.SetTTL and TTL).
//
// Files:
//   - ttl.go: Factory, the module, its two routes.
//
// Tests: ttl_test.go checks that PUT answers as GET then reports (0 → -1)
// and refuses bad bodies.
package ttl
