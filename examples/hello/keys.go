package hello

import "github.com/agentsidecar/agentsidecar/redisstore"

// SessionFamily is the module's own session family: one counter per
// session, sidecar_hello_session:<tag><u>:<s>. Registering it as a session
// family is all it takes for the stock session scripts to slide its TTL
// with the session's other keys and to delete it with the session
// (redisstore.SessionPrefixes reaches them as the generated "keys"
// library): no stock file names it. Register panics at start if another
// family took the prefix.
var SessionFamily = redisstore.Owner("hello").Session("hello session greetings", "sidecar_hello_session", "h", redisstore.KindString, "the greetings of one session (a counter), slid and deleted with the session")

// UserFamily is the module's own user family: one counter per user of the
// greetings of all their sessions, sidecar_hello_user:<tag><u>. It lives
// as long as the user's sessions: the session greeting keeps it
// (session.keep), so the user's marker lists it and every slide of any of
// the user's sessions gives it at least that session's TTL. A user family
// is erased with the user (DELETE /v1/users/{u}) without a line of stock
// code naming it.
var UserFamily = redisstore.Owner("hello").User("hello user greetings", "sidecar_hello_user", "", redisstore.KindString, "the session greetings of one user (a counter), living as long as the user's sessions, erased with the user")
