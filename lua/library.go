package lua

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
)

// A function library holds every script of one prelude chain (the scripts
// on session_lib, those on messages_lib, ..., and those without a prelude):
// the chain's helpers defined once, when Redis loads the library, and each
// script registered as a function whose body is the script's own text.
// EVAL defines the prelude's ~1 000 lines of functions again on every
// call; FCALL does not.
//
// Per-call state. A prelude's top level computes some values from KEYS and
// ARGV (the session's key names, SESSION_TTL_SECONDS, ...) and keeps some
// per-call caches. Those statements sit between "--! per-call" and
// "--! end per-call" lines (comments, so the file stays one EVAL script).
// In a library, each such section becomes declarations at the same place
// (so the helpers below it close over them exactly as before) and a
// function that runs the section's statements as assignments; every
// function call starts by setting KEYS and ARGV and running every section
// in order, so no value outlives its call (a table left by the previous
// call would leak one session's data into another's). Everything outside
// the sections runs once, at FUNCTION LOAD: it must not read KEYS, ARGV or
// Redis, nor keep state a call changes.

// libPrefix starts the name of every library of the sidecar.
const libPrefix = "agentsidecar_"

// noWrites names the scripts that never write (flag no-writes): Redis runs
// them even when it is over maxmemory, as it runs such a script with EVAL.
// (A function without it is refused as a whole while Redis is over
// maxmemory, where EVAL refused only its first write.) Redis enforces the
// flag: a write in such a function fails.
var noWrites = map[string]bool{
	"blocks_read":            true,
	"lock_inspect":           true,
	"messages_read":          true,
	"session_read":           true,
	"session_search_pending": true,
}

// library is one function library: its name (with a digest of its text,
// so two versions of the sidecar sharing a Redis each call their own) and
// the text FUNCTION LOAD takes.
type library struct {
	name, source string
}

// binding is how a script is called through Functions.
type binding struct {
	lib *library
	fn  string // the function's name (with the library's digest)
	ro  bool   // no-writes: FCALL_RO
}

// libSet is the libraries of every registered script, built once after the
// last New (at the first call or Load).
type libSet struct {
	libs  []*library
	by    map[*Script]binding
	probe string // a no-writes function of libs[0] that returns 1
}

var libCache atomic.Pointer[libSet]

// libraries returns the library set of the scripts registered now.
func libraries() *libSet {
	if set := libCache.Load(); set != nil {
		return set
	}
	registry.Lock()
	defer registry.Unlock()
	if set := libCache.Load(); set != nil {
		return set
	}
	scripts := make([]*Script, 0, len(registry.m))
	for _, s := range registry.m {
		scripts = append(scripts, s)
	}
	set := buildLibraries(scripts)
	libCache.Store(set)
	return set
}

// buildLibraries groups scripts by prelude chain, one library per chain.
func buildLibraries(scripts []*Script) *libSet {
	sort.Slice(scripts, func(i, j int) bool { return scripts[i].Name < scripts[j].Name })
	chains := map[string][]*Script{}
	var order []string
	for _, s := range scripts {
		key := strings.Join(s.chain, "/")
		if _, ok := chains[key]; !ok {
			order = append(order, key)
		}
		chains[key] = append(chains[key], s)
	}
	sort.Strings(order)
	set := &libSet{by: map[*Script]binding{}}
	for i, key := range order {
		members := chains[key]
		render := func(suffix string) string {
			return librarySource(chainName(members[0].chain)+suffix, members[0].chain, members, suffix, i == 0)
		}
		sum := sha1.Sum([]byte(render("")))
		suffix := "_" + hex.EncodeToString(sum[:])[:12]
		lib := &library{name: libPrefix + chainName(members[0].chain) + suffix, source: render(suffix)}
		set.libs = append(set.libs, lib)
		for _, s := range members {
			set.by[s] = binding{lib: lib, fn: s.Name + suffix, ro: noWrites[s.Name]}
		}
		if i == 0 {
			set.probe = "agentsidecar_probe" + suffix
		}
	}
	return set
}

// chainName names a library by the last prelude of its chain.
func chainName(chain []string) string {
	if len(chain) == 0 {
		return "plain"
	}
	return strings.TrimSuffix(chain[len(chain)-1], "_lib")
}

// librarySource is the text of one library: KEYS and ARGV as library
// locals, the chain's preludes with their per-call sections rewritten,
// begin (the per-call statements, in order), then one function per script.
func librarySource(name string, chain []string, scripts []*Script, suffix string, probe bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!lua name=%s%s\n", libPrefix, name)
	b.WriteString("local KEYS, ARGV\n")
	for _, lib := range unionIncludes(scripts) {
		libraryChunk(&b, lib)
	}
	var sections []string
	for _, pre := range chain {
		body, err := files.ReadFile(pre + ".lua")
		if err != nil {
			panic(fmt.Sprintf("lua: prelude %s.lua: %v", pre, err))
		}
		text, fns, _ := perCall(pre, string(body), len(sections))
		sections = append(sections, fns...)
		b.WriteString(text)
		b.WriteString("\n")
	}
	b.WriteString("local function sidecar_begin(keys, argv)\n  KEYS, ARGV = keys, argv\n")
	for _, fn := range sections {
		fmt.Fprintf(&b, "  %s()\n", fn)
	}
	b.WriteString("end\n")
	for _, s := range scripts {
		flags := ""
		if noWrites[s.Name] {
			flags = "'no-writes'"
		}
		fmt.Fprintf(&b, "redis.register_function{function_name = '%s%s', flags = {%s}, callback = function(KEYS, ARGV) sidecar_begin(KEYS, ARGV)\n%s\nend}\n",
			s.Name, suffix, flags, s.body)
	}
	if probe {
		fmt.Fprintf(&b, "redis.register_function{function_name = 'agentsidecar_probe%s', flags = {'no-writes'}, callback = function() return 1 end}\n", suffix)
	}
	return b.String()
}

var localDecl = regexp.MustCompile(`^local\s+([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*(=|$|--)`)

// perCall rewrites the per-call sections of prelude name (see the top of
// this file): the "--! per-call" line becomes the declarations of every
// local the section makes plus the opening of a function, each top-level
// "local a, b = ..." in it an assignment "a, b = ...", and "--! end
// per-call" the function's end, so line numbers stay those of the file.
// It returns the text, the section functions' names, numbered from n, and
// the names the sections declare.
func perCall(name, src string, n int) (text string, fns, declared []string) {
	lines := strings.Split(src, "\n")
	open := -1
	var names []string
	for i, line := range lines {
		switch {
		case strings.TrimSpace(line) == "--! per-call":
			if open >= 0 {
				panic(fmt.Sprintf("lua: %s.lua:%d: per-call section inside another", name, i+1))
			}
			open, names = i, nil
		case strings.TrimSpace(line) == "--! end per-call":
			if open < 0 {
				panic(fmt.Sprintf("lua: %s.lua:%d: end of a per-call section never opened", name, i+1))
			}
			fn := fmt.Sprintf("sidecar_per_call_%d", n+len(fns)+1)
			fns = append(fns, fn)
			head := ""
			if len(names) > 0 {
				head = "local " + strings.Join(names, ", ") + "; "
			}
			lines[open] = head + "local function " + fn + "()"
			lines[i] = "end"
			declared = append(declared, names...)
			open = -1
		case open >= 0 && strings.HasPrefix(line, "local "):
			if strings.HasPrefix(line, "local function ") {
				panic(fmt.Sprintf("lua: %s.lua:%d: a function in a per-call section", name, i+1))
			}
			m := localDecl.FindStringSubmatch(line)
			if m == nil {
				panic(fmt.Sprintf("lua: %s.lua:%d: per-call line not understood: %s", name, i+1, line))
			}
			vars := strings.Split(m[1], ",")
			for j := range vars {
				vars[j] = strings.TrimSpace(vars[j])
			}
			names = append(names, vars...)
			if m[2] == "=" {
				lines[i] = strings.TrimPrefix(line, "local ")
			} else {
				// a bare declaration: nil again on every call
				lines[i] = strings.Join(vars, ", ") + " = nil" + strings.TrimPrefix(line, m[0][:len(m[0])-len(m[2])])
			}
		}
	}
	if open >= 0 {
		panic(fmt.Sprintf("lua: %s.lua:%d: per-call section never ended", name, open+1))
	}
	return strings.Join(lines, "\n"), fns, declared
}

// Library is one Redis Functions library of the sidecar: its name and the
// text FUNCTION LOAD takes.
type Library struct {
	Name, Source string
}

// Libraries returns the libraries Load loads: one per prelude chain of the
// registered scripts (for tools and benchmarks; redis-cli -x FUNCTION LOAD
// REPLACE < file loads one by hand).
func Libraries() []Library {
	set := libraries()
	out := make([]Library, len(set.libs))
	for i, lib := range set.libs {
		out[i] = Library{Name: lib.name, Source: lib.source}
	}
	return out
}

// Function is the name of the script's function in its library (FCALL's
// first argument): its name and the library's digest.
func (s *Script) Function() string {
	return libraries().by[s].fn
}
