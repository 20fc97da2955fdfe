package lua

import (
	"fmt"
	"strings"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// keysLibrary is the generated library "keys": what packages registered in
// Go (redisstore.Register, redisstore.RegisterMarkerField) that the core
// (lib/session.lua) acts on without naming it,
//
//	keys.session  the prefixes of the session families, sorted
//	keys.code     prefix -> the family's code (a record's fams)
//	keys.prefix   code -> prefix
//	keys.pat      code -> " <code> ", as a record's fams holds it
//	keys.cognee   the prefixes of Cognee's families (its lists), and
//	              cognee_entries its entries list's (a session without a
//	              record has its keys expire with it)
//	keys.members  the prefixes of the user families of sorted sets of the
//	              user's session ids (Family.SessionMembers, ScopeUser)
//	keys.marker   the registered fields of the user's marker: .user, and
//	              .session (per session: "<field>:<session id>")
//
// made at the first use of a script, after every package's init, so a
// module outside the repository that registers a session family has its
// keys slid and deleted with the session without a line of Lua of its own.
func keysLibrary() string {
	var b strings.Builder
	b.WriteString("-- keys: generated from the registered key families (lua/keys.go)\n")
	var session, codes, prefixes, pats, cognee, members []string
	for _, f := range redisstore.Families() {
		if f.SessionMembers && f.Scope == redisstore.ScopeUser {
			members = append(members, fmt.Sprintf("%q", f.Prefix))
		}
		if f.Scope != redisstore.ScopeSession {
			continue
		}
		session = append(session, fmt.Sprintf("%q", f.Prefix))
		codes = append(codes, fmt.Sprintf("[%q] = %q", f.Prefix, f.Code))
		prefixes = append(prefixes, fmt.Sprintf("[%q] = %q", f.Code, f.Prefix))
		pats = append(pats, fmt.Sprintf("[%q] = %q", f.Code, " "+f.Code+" "))
		if f.Cognee {
			cognee = append(cognee, fmt.Sprintf("%q", f.Prefix))
		}
	}
	var user, perSession []string
	for _, m := range redisstore.MarkerFields() {
		if m.PerSession {
			perSession = append(perSession, fmt.Sprintf("%q", m.Name))
		} else {
			user = append(user, fmt.Sprintf("%q", m.Name))
		}
	}
	list := func(items []string) string { return "{ " + strings.Join(items, ", ") + " }" }
	fmt.Fprintf(&b, "return {\n  session = %s,\n  code = %s,\n  prefix = %s,\n  pat = %s,\n  cognee = %s,\n  cognee_entries = %q,\n  members = %s,\n  marker = { user = %s, session = %s },\n}\n",
		list(session), list(codes), list(prefixes), list(pats), list(cognee), redisstore.EntriesFamily.Prefix, list(members), list(user), list(perSession))
	return b.String()
}
