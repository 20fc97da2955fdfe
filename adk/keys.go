package adk

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// SidecarSession is the sidecar session that holds ADK session (app,
// session) of a user: "<app>.<session>" when the app's name holds no '.'
// and that fits an id (128 characters), else "adk-" and the SHA1 (hex) of
// app, a NUL and session. The two forms never meet (only the first holds a
// '.'), and the first splits at its first '.': two apps' sessions of one
// id are two sidecar sessions. adk.lua's sidecar_id is the same rule.
func SidecarSession(app, session string) string {
	if !strings.Contains(app, ".") && len(app)+1+len(session) <= redisstore.MaxIDLength {
		return app + "." + session
	}
	sum := sha1.Sum([]byte(app + "\x00" + session))
	return "adk-" + hex.EncodeToString(sum[:])
}

// The orders of an app's index across users (AppIndexFamily's suffixes).
const (
	OrderCreated = "created" // creation time (ms), then member
	OrderAsc     = "asc"     // last update time, then member
	OrderDesc    = "desc"    // last update time negated, then member
)

// appMember is a session's member of the app's index: "<session> <user>",
// so that sessions of equal score sort by session id (ADK's tie order),
// then by user (a space sorts below every id character).
func appMember(user, session string) string { return session + " " + user }

// The module's key families (adk.lua describes their fields). The session
// families are slid and deleted with the session by the core; the user's
// are in the user's slot and live as long as the user's sessions (the
// core's session.keep); the app's state is in the app's own slot on
// Cluster; the app's index of sessions across users has a shard in each
// bucket, written by the scripts of the bucket's users.
var (
	SessionFamily   = redisstore.Owner("adk").Session("adk session", "adk_session", "a", redisstore.KindHash, "a Google ADK session's own record: app name, created, last update time (the last event's timestamp), event count")
	StateFamily     = redisstore.Owner("adk").Session("adk session state", "adk_state", "as", redisstore.KindHash, "a Google ADK session's state: `=<key>` → JSON value, `#` → its bytes (at most `ADK_MAX_STATE_BYTES`)")
	EventsFamily    = redisstore.Owner("adk").Session("adk events", "adk_events", "ae", redisstore.KindHash, "a Google ADK session's events: `e<i>` → the event's JSON, `t<i>` → its timestamp, `i:<event id>` → i (at most `ADK_MAX_EVENTS`)")
	UserStateFamily = redisstore.Owner("adk").User("adk user state", "adk_user_state", "<app_name>", redisstore.KindHash, "the `user:` state a user's ADK sessions of one app share: `=<key>` → JSON value, `#` → its bytes (at most `ADK_MAX_STATE_BYTES`)")
	IndexFamily     = redisstore.Owner("adk").User("adk sessions of a user", "adk_index", "<app_name>", redisstore.KindZSet, "a user's ADK sessions of one app, scored by creation order (listSessions; at most `ADK_MAX_SESSIONS` members); members of sessions gone dropped as met")
	AppIndexFamily  = redisstore.Register(redisstore.Family{
		Name: "adk sessions of an app", Prefix: "adk_app_index", Scope: redisstore.ScopeBucket, Suffix: "<app_name>:<order>",
		Kind: redisstore.KindZSet, UserMembers: "* " + redisstore.UserMember, Owner: "adk", TTL: redisstore.RetentionTTL,
		Reason: "at least the TTL of each ADK session of the app in the bucket: each of them lists it in its record and every slide of the session keeps it " +
			"(none while one of them has none); members of sessions gone are dropped by ADK's deleteSession, by the listings that meet them and by each create (two examined), " +
			"a user's erasure sweeps out all of the user's",
		Description: "an ADK app's sessions of the bucket's users (listSessions without a user), member `<session_id> <user_id>`, " +
			"in three orders: `created` (creation time, ms), `asc` (last update time), `desc` (last update time negated)",
	})
	AppStateFamily = redisstore.Register(redisstore.Family{
		Name: "adk app state", Prefix: "adk_app_state", Scope: redisstore.ScopeBucket, Suffix: "<app_name>",
		Kind: redisstore.KindHash, Owner: "adk", TTL: redisstore.RetentionTTL,
		Reason:      "at least the session TTL from its last change (`SESSION_TTL_SECONDS`, or the TTL of the session whose event changed it); at most `ADK_MAX_STATE_BYTES`",
		Description: "the `app:` state every user of an ADK app shares: `=<key>` → JSON value, `#` → its bytes; on Cluster in the app's own bucket (the bucket of its name), written by a second script after the event",
	})
)
