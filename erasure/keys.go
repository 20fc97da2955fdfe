package erasure

import "github.com/agentsidecar/agentsidecar/redisstore"

// ProgressFamily is a user's erasure progress (DELETE /v1/users/{u}), named
// by the SHA1 of the user id (lowercase hex) so that no key names an erased
// user: agent_user_erasure:<tag><sha1(u)>. Its existence is the fence every
// write of the user checks first (lib/erasure.lua, erasure.fenced).
var ProgressFamily = redisstore.Register(redisstore.Family{
	Name: "user erasure", Prefix: "agent_user_erasure", Scope: redisstore.ScopeUser,
	Kind: redisstore.KindHash, Owner: "erasure", TTL: redisstore.RetentionTTL,
	Reason: "one hour from the erasure's last step while it runs (call again to finish it), 30 s once it is done",
	Description: "a user's erasure under way (`agent_user_erasure:<sha1 of user_id>`): phase, scan cursors, sessions erased; " +
		"while it exists every write of the user is refused (409 `user_erasing`)",
})
