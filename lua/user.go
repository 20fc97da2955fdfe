package lua

// UserErase is one bounded step of erasing a user (module erasure): a
// session script over the keys of the user's session "-" (lib/session.lua).
var UserErase = load("user_erase")
