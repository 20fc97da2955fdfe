package lua

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
)

// One Redis Functions library holds every script: each library any script
// includes, once, at its top level (defined when Redis loads the library,
// include.go), and each script registered as a function whose body is the
// script's own text. EVAL defines a script's libraries again on every
// call; FCALL does not. A library's top level keeps no state (everything a
// call is about travels in the context its functions take), so one
// definition serves every call.

// libPrefix starts the name of every library of the sidecar.
const libPrefix = "agentsidecar_"

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

// libSet is the library of every registered script, built once after the
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

// buildLibraries makes the one library of scripts.
func buildLibraries(scripts []*Script) *libSet {
	sort.Slice(scripts, func(i, j int) bool { return scripts[i].Name < scripts[j].Name })
	sum := sha1.Sum([]byte(librarySource(scripts, "")))
	suffix := "_" + hex.EncodeToString(sum[:])[:12]
	lib := &library{name: libPrefix + "scripts" + suffix, source: librarySource(scripts, suffix)}
	set := &libSet{libs: []*library{lib}, by: map[*Script]binding{}, probe: "agentsidecar_probe" + suffix}
	for _, s := range scripts {
		set.by[s] = binding{lib: lib, fn: s.Name + suffix, ro: s.readOnly}
	}
	return set
}

// librarySource is the text of the library: the included libraries, each
// once, then one function per script, then the probe Load calls.
func librarySource(scripts []*Script, suffix string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!lua name=%sscripts%s\n", libPrefix, suffix)
	for _, lib := range unionIncludes(scripts) {
		libraryChunk(&b, lib)
	}
	for _, s := range scripts {
		flags := ""
		if s.readOnly {
			flags = "'no-writes'"
		}
		fmt.Fprintf(&b, "redis.register_function{function_name = '%s%s', flags = {%s}, callback = function(KEYS, ARGV)\n%s\nend}\n",
			s.Name, suffix, flags, s.body)
	}
	fmt.Fprintf(&b, "redis.register_function{function_name = 'agentsidecar_probe%s', flags = {'no-writes'}, callback = function() return 1 end}\n", suffix)
	return b.String()
}

// Library is one Redis Functions library of the sidecar: its name and the
// text FUNCTION LOAD takes.
type Library struct {
	Name, Source string
}

// Libraries returns the libraries Load loads (for tools and benchmarks;
// redis-cli -x FUNCTION LOAD REPLACE < file loads one by hand).
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
