package lua

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// probeBody shows every value the per-call sections of chain's preludes
// declare (tables by their contents), then changes them all and the
// tables' contents, after a retarget to another session, as a careless
// script could: the next call, on another session, must see its own.
func probeBody(last string) string {
	var names, later []string // later: declared bare at the top, set per call (own_keys) or once
	for _, pre := range preludeChain("--! prelude: " + last + "\n") {
		src, err := files.ReadFile(pre + ".lua")
		if err != nil {
			panic(err)
		}
		_, _, declared := perCall(pre, string(src), 0)
		names = append(names, declared...)
		for _, m := range bareLocal.FindAllStringSubmatch(string(src), -1) {
			for _, n := range strings.Split(m[1], ",") {
				later = append(later, strings.TrimSpace(n))
			}
		}
	}
	var b strings.Builder
	b.WriteString("--! prelude: " + last + "\n")
	b.WriteString(`local function show(v)
  if type(v) ~= 'table' then return tostring(v) end
  local out = {}
  for k, x in pairs(v) do out[#out + 1] = tostring(k) .. '=' .. tostring(x) end
  table.sort(out)
  return '{' .. table.concat(out, ',') .. '}'
end
local out = {}
`)
	for _, n := range names {
		fmt.Fprintf(&b, "out[#out + 1] = %q .. show(%s)\n", n+"=", n)
	}
	for _, n := range later {
		fmt.Fprintf(&b, "out[#out + 1] = %q .. (type(%[2]s) == 'function' and 'function' or show(%[2]s))\n", n+"=", n)
	}
	b.WriteString("retarget('someone-else')\n")
	for _, n := range names {
		fmt.Fprintf(&b, "if type(%[1]s) == 'table' then %[1]s[1], %[1]s.leak = 'x', 'x' else %[1]s = 'x' end\n", n)
	}
	b.WriteString("return out\n")
	return b.String()
}

var bareLocal = regexp.MustCompile(`(?m)^local ([A-Za-z_][A-Za-z0-9_]*(?:, [A-Za-z_][A-Za-z0-9_]*)*)(?: --.*)?$`)

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
