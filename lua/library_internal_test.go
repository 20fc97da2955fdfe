package lua

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// probeBody reads every per-call value of the preludes of chain, then
// changes them all (and the caches), as a careless script could: the next
// call, on another session, must see its own values.
func probeBody(last string) string {
	names := []string{"K_ENTRIES", "K_TRACES", "K_CONTEXT", "K_RECORD", "K_INDEX", "K_USAGE", "K_USER.running",
		"K_GLOBAL.failed", "K_EXPIRY", "K_TOTALS", "K_BY_MODEL", "DEFAULT_TTL", "MAX_ENTRIES", "EVENTS_MAXLEN",
		"SID", "GID", "K_EVENTS", "K_CTX_INDEX", "META_TAG", "K_USER_STATE", "K_STATE", "K_MSGS", "K_SDOCS",
		"K_EKEYS", "K_USER_EVENTS", "table.concat(SESSION_KEYS, ' ')"}
	var extra string
	switch last {
	case "messages_lib":
		names = append(names, "SEARCH_PREFIX", "K_SSTATS", "seen")
		extra = "local seen = 0\nfor _ in pairs(NODES) do seen = seen + 1 end\nNODES['leak'] = true\n"
	case "blocks_lib":
		names = append(names, "K_UBLOCKS")
	}
	vals := make([]string, len(names))
	for i, n := range names {
		vals[i] = fmt.Sprintf("%q .. tostring(%s)", n+"=", n)
	}
	return "--! prelude: " + last + "\n" + extra + "local out = {" + strings.Join(vals, ", ") + "}\n" +
		"retarget('someone-else')\nDEFAULT_TTL, MAX_ENTRIES, EVENTS_MAXLEN, META_TAG = -7, -7, -7, 'x'\n" +
		"K_USER.running = 'x'\nSESSION_KEYS[1] = 'x'\nreturn out\n"
}

// Every per-call value of every prelude is set again on every call: two
// calls of one library function on different sessions (of different
// users, standalone and Cluster key names) back to back answer what EVAL
// answers for each, though the first changed every value it could.
func TestPerCallStateIsReset(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	c := srv.Client(t)
	type session struct {
		keys, args []string
	}
	sessions := []session{}
	for i, l := range []redisstore.Layout{{}, {Cluster: true}, {}} {
		user, sid := fmt.Sprintf("user%d", i), fmt.Sprintf("sess%d", i)
		k := l.Session(user, sid)
		keys := []string{k.Entries, k.Traces, k.Context, k.Record, k.Index, k.Usage,
			k.UserIndex[0], k.UserIndex[1], k.UserIndex[2], k.GlobalIndex[0], k.GlobalIndex[1], k.GlobalIndex[2],
			k.Expiry, k.Totals, k.ByModel}
		sessions = append(sessions, session{keys, []string{fmt.Sprint(100 + i), fmt.Sprintf("%d:%d", 10+i, 500+i), user, sid}})
	}
	for _, last := range []string{"session_lib", "messages_lib", "blocks_lib", "registry_lib"} {
		t.Run(last, func(t *testing.T) {
			body := probeBody(last)
			s := &Script{Name: "probe", Source: withPrelude("probe", body), body: body, chain: preludeChain(body)}
			set := buildLibraries([]*Script{s})
			if err := c.Do(t.Context(), c.B().FunctionLoad().Replace().FunctionCode(set.libs[0].source).Build()).Error(); err != nil {
				t.Fatalf("FUNCTION LOAD: %v", err)
			}
			for i, ses := range sessions {
				fc := c.Do(t.Context(), c.B().Fcall().Function(set.by[s].fn).Numkeys(15).Key(ses.keys...).Arg(ses.args...).Build())
				ev := c.Do(t.Context(), c.B().Eval().Script(s.Source).Numkeys(15).Key(ses.keys...).Arg(ses.args...).Build())
				got, err := fc.AsStrSlice()
				if err != nil {
					t.Fatal(err)
				}
				want, err := ev.AsStrSlice()
				if err != nil {
					t.Fatal(err)
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("call %d:\n got (FCALL) %q\nwant (EVAL)  %q", i, got, want)
				}
			}
		})
	}
}

// topLevel is a top-level statement of a prelude that runs once, at
// FUNCTION LOAD, and keeps no per-call state: a function, a comment, a
// number or string constant, a bare declaration, or a function assigned
// to a name declared before. Anything else (a table, a call, a value from
// KEYS or ARGV) belongs in a per-call section.
var topLevel = regexp.MustCompile(`^(\s|--|end\b|local function |local [A-Za-z_][A-Za-z0-9_, ]*(--.*)?$|` +
	`local [A-Za-z_][A-Za-z0-9_, ]* = ('[^']*'|-?[0-9][0-9., -]*)(\s*--.*)?$|[A-Za-z_][A-Za-z0-9_]* = function\()`)

// constTables are top-level tables no code changes (read-only lists).
var constTables = map[string]bool{"local STATUSES = { 'running', 'completed', 'failed' }": true}

// Outside the per-call sections a prelude's top level holds only what
// can be shared by every call: a table cache or a value read from KEYS
// or ARGV added outside them would leak from one call to the next.
func TestPreludeTopLevelOutsidePerCall(t *testing.T) {
	entries, err := files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "_lib.lua") {
			continue
		}
		src, _ := files.ReadFile(e.Name())
		in := false
		for i, line := range strings.Split(string(src), "\n") {
			switch {
			case strings.TrimSpace(line) == "--! per-call":
				in = true
			case strings.TrimSpace(line) == "--! end per-call":
				in = false
			case in || line == "" || topLevel.MatchString(line) || constTables[line]:
			default:
				t.Errorf("%s:%d: top-level statement outside a per-call section: %s", e.Name(), i+1, line)
			}
		}
	}
}
