// Package erasure is the module that erases a user: DELETE
// /v1/users/{user_id} removes every key of the user and the user's members
// of the indexes across users, in bounded steps (user_erase.lua), so no step
// holds Redis for long, and answers 202 with an estimate of what is left
// when the request's deadline comes first (200 once done). The progress
// lives in Redis, in the user's marker (redisstore.Layout.UserMarker, named
// by the user's SHA1), so a call from any pod continues it; with it the
// marker's fence, which refuses every write of the user (409 user_erasing)
// from the first step until Settle after the last, so the erasure's scan
// misses no key written behind it. The keys are found by the registered
// families (a session's record lists its families and indexes), so a
// module's own keys go without a line of code here.
//
// Files:
//   - erasure.go: Factory, Config (USER_ERASE_STEPS_PER_CALL), the module,
//     its route, the loop of steps within the deadline.
//   - scripts.go: embeds and registers user_erase.lua.
//   - user_erase.lua: one bounded step: SCAN of the user's node erasing
//     each session found and the user families' keys, then the bucket's
//     status and expiry sets, then the metadata indexes; at the end the
//     kept keys and the marker but for its fence.
//
// Tests: erasure_test.go, on all three backends with every module, SCANs
// every key and value: a deleted session and an erased user named nowhere,
// other users byte for byte, steps alternating two hosts, writers racing
// the erasure, a step on another server; cost_test.go a step's Redis
// commands; bench_test.go BenchmarkEraseUser (Redis time per step among
// many other keys).
package erasure
