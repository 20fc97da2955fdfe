package lua

import (
	"fmt"
	"strings"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// keysLibrary is the generated library "keys": the key families packages
// registered (redisstore.Register) that the scripts act on as a whole,
//
//	keys.session  the prefixes of the families of a session's own keys
//	              (<prefix>:<tag><u>:<s>): what a TTL slide moves and a
//	              delete removes, a module's own families among them
//
// made at the first use of a script, after every package's init, so a
// module outside the repository that registers a session family has its
// keys slid and deleted with the session without a line of Lua of its own.
func keysLibrary() string {
	var b strings.Builder
	b.WriteString("-- keys: generated from the registered key families (lua/keys.go)\nreturn {\n  session = {")
	for i, p := range redisstore.SessionPrefixes() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", p)
	}
	b.WriteString("},\n}\n")
	return b.String()
}
