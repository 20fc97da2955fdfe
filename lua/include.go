package lua

import (
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Shared Lua lives in small libraries (lib/<name>.lua), each a chunk that
// returns one table of functions. A script names the libraries it uses in
// its header, one line each, in the manner of BullMQ's includes:
//
//	--- @include session
//
// and uses each as a local of that name (session.open(KEYS, ARGV)). A
// library includes others the same way. The loader resolves the includes,
// each library once and after those it includes:
//
//   - for EVAL, a script's text is its libraries, each as
//     "local <name> = (function() <library> end)()", then its own text;
//   - for Redis Functions, one library holds every library any script
//     includes, once, defined when Redis loads it, and each script as a
//     function (library.go).
//
// A library keeps no state of its own between calls and never reads KEYS
// or ARGV: what a call is about (its session's keys, settings, caches)
// travels in a context its functions take (session.open returns one). So
// one library text serves every call, under EVAL and FCALL alike.
//
// A library is either a stock file (lib/*.lua) or one a module outside
// this package adds with NewLibrary; "keys" is generated from the key
// families packages register (keys.go).

var includeLine = regexp.MustCompile(`(?m)^--- @include ([a-z][a-z0-9_]*)[ \t]*\r?$`)

// includesOf lists the libraries src names, in its order.
func includesOf(src string) []string {
	var out []string
	for _, m := range includeLine.FindAllStringSubmatch(src, -1) {
		out = append(out, m[1])
	}
	return out
}

// libs holds the libraries: the stock files, those of NewLibrary, and the
// generated ones (their text made at first use, after every init). It is
// made before the package's scripts (load refers to it).
var libs = struct {
	sync.Mutex
	src map[string]func() string
}{src: stockLibraries()}

// stockLibraries reads lib/*.lua and adds the generated keys library.
func stockLibraries() map[string]func() string {
	out := map[string]func() string{"keys": keysLibrary}
	entries, err := fs.ReadDir(files, "lib")
	if err != nil {
		panic(fmt.Sprintf("lua: lib/ not embedded: %v", err))
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".lua")
		if !ok {
			continue
		}
		body, err := files.ReadFile("lib/" + e.Name())
		if err != nil {
			panic(err)
		}
		text := string(body)
		out[name] = func() string { return text }
	}
	return out
}

// NewLibrary adds a library a module outside this package embeds, for its
// scripts to include by name (--- @include name), as the stock ones are.
// Call it at package init, before New of a script that includes it. A name
// already taken, or not of lowercase letters, digits and '_', panics.
func NewLibrary(name, source string) {
	if !includeName.MatchString(name) || luaNames[name] {
		panic(fmt.Sprintf("lua: library name %q: want a lowercase letter, then letters, digits and _, and no Lua keyword or global", name))
	}
	libs.Lock()
	defer libs.Unlock()
	if _, dup := libs.src[name]; dup {
		panic(fmt.Sprintf("lua: library %q registered twice", name))
	}
	libs.src[name] = func() string { return source }
}

// includeName is what an include line names.
var includeName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// luaNames are names a library must not take: every library is a local of
// that name ahead of every script in the Functions library, so a library
// called string or redis would hide Redis's own for every script there,
// and a keyword would not compile.
var luaNames = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`and break do else elseif end false for function goto if in local nil
		not or repeat return then true until while
		_G _VERSION assert bit cjson cmsgpack collectgarbage coroutine debug error gcinfo getfenv
		getmetatable ipairs load loadstring math module newproxy next os pairs pcall print rawequal
		rawget rawset redis require select setfenv setmetatable string struct table tonumber tostring
		type unpack xpcall`) {
		luaNames[n] = true
	}
}

// libText returns the text of library name, and whether there is one.
func libText(name string) (string, bool) {
	libs.Lock()
	f, ok := libs.src[name]
	libs.Unlock()
	if !ok {
		return "", false
	}
	return f(), true
}

// resolveIncludes returns the libraries script name (text src) includes,
// directly or through others, each once and after the ones it includes. An
// unknown library or a cycle panics: New runs at init, so the mistake
// shows at the first start.
func resolveIncludes(name, src string) []string {
	var out []string
	state := map[string]int{} // 1: being resolved, 2: done
	var visit func(from, lib string)
	visit = func(from, lib string) {
		switch state[lib] {
		case 1:
			panic(fmt.Sprintf("lua: %s includes %s, which includes it back", from, lib))
		case 2:
			return
		}
		text, ok := libText(lib)
		if !ok {
			panic(fmt.Sprintf("lua: %s includes %s: no such library", from, lib))
		}
		state[lib] = 1
		if lib != "keys" { // generated: includes nothing
			for _, dep := range includesOf(text) {
				visit(lib, dep)
			}
		}
		state[lib] = 2
		out = append(out, lib)
	}
	for _, lib := range includesOf(src) {
		visit(name, lib)
	}
	return out
}

// libraryChunk is library name as a local of the text around it.
func libraryChunk(b *strings.Builder, name string) {
	text, _ := libText(name)
	fmt.Fprintf(b, "local %s = (function()\n%s\nend)()\n", name, strings.TrimRight(text, "\n"))
}

// evalSource is the text EVAL runs: the libraries, then the script's body.
func evalSource(includes []string, body string) string {
	if len(includes) == 0 {
		return body
	}
	var b strings.Builder
	for _, lib := range includes {
		libraryChunk(&b, lib)
	}
	b.WriteString(body)
	return b.String()
}

// unionIncludes is every library scripts include, each once, after the
// ones it includes (the order of the first script that names it, scripts
// taken by name).
func unionIncludes(scripts []*Script) []string {
	var out []string
	seen := map[string]bool{}
	sorted := append([]*Script(nil), scripts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, s := range sorted {
		for _, lib := range s.includes {
			if !seen[lib] {
				seen[lib] = true
				out = append(out, lib)
			}
		}
	}
	return out
}
