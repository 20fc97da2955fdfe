package hello

import "github.com/agentsidecar/agentsidecar/redisstore"

// SessionFamily is the module's own session family: one counter per
// session, sidecar_hello_session:<tag><u>:<s>. Registering it as a session
// family is all it takes for the stock session scripts to slide its TTL
// with the session's other keys and to delete it with the session
// (redisstore.SessionPrefixes reaches them as the generated "keys"
// library): no stock file names it. Register panics at start if another
// family took the prefix.
var SessionFamily = redisstore.Register(redisstore.Family{
	Name: "hello session greetings", Prefix: "sidecar_hello_session", Code: "h", Scope: redisstore.ScopeSession,
	Kind: redisstore.KindString, Owner: "hello", TTL: redisstore.SessionTTL,
	Description: "the greetings of one session (a counter), slid and deleted with the session",
})
