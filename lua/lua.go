package lua

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

//go:embed *.lua lib/*.lua
var files embed.FS

// Script is one Lua script: embedded here, or registered by a module with
// New.
type Script struct {
	Name     string   // file name without .lua: the label in metrics
	body     string   // the script's own text, as given to New
	includes []string // the libraries it includes, each after those it includes
	// readOnly: the script never writes (ReadOnly): its function has the
	// flag no-writes, so Redis runs it even over maxmemory, as it runs such
	// a script with EVAL (a function without it is refused as a whole while
	// Redis is over maxmemory, where EVAL refused only its first write).
	// Redis enforces the flag: a write in such a function fails.
	readOnly bool

	once sync.Once // resolves the text below at the first use, after every init
	src  string    // the text EVAL runs: its libraries, then body
	lua  *rueidis.Lua
	sha1 string

	duration prometheus.Observer // this script's series, resolved once
	errors   prometheus.Counter
}

// Source is the text Redis runs with EVAL: the script's libraries (each
// once, those it includes first), then its own text.
func (s *Script) Source() string {
	s.resolve()
	return s.src
}

// resolve builds the script's text at its first use: a generated library
// (keys) depends on what every package registered at init.
func (s *Script) resolve() {
	s.once.Do(func() {
		s.src = evalSource(s.includes, s.body)
		sum := sha1.Sum([]byte(s.src))
		s.sha1 = hex.EncodeToString(sum[:])
		s.lua = rueidis.NewLuaScript(s.src)
	})
}

// registry holds every script of this binary: the embedded ones, then those
// modules outside this package added with New (at their package init).
var registry = struct {
	sync.Mutex
	m map[string]*Script
}{m: map[string]*Script{}}

// load builds the Script of name.lua; it panics at package init if the file
// is missing, which only a broken build can cause.
func load(name string, opts ...Option) *Script {
	return FromFS(files, name, opts...)
}

// New registers a script a module outside this package embeds itself
// (//go:embed hello.lua, then a package-level New("hello", src)), exactly
// as the stock scripts are: its SHA1 for EVALSHA, its series of the script
// metrics (labelled name), and SCRIPT LOAD by readiness. Its
// "--- @include name" lines name the libraries it uses (session, for a
// script that keeps a session's record and TTLs current; include.go).
// name is a metrics label of lowercase letters, digits and '_': prefix it
// with the module's name. A bad or already registered name, or an unknown
// library, panics: New runs at package init, so the mistake shows at the
// first start.
func New(name, source string, opts ...Option) *Script {
	if !validName(name) {
		panic(fmt.Sprintf("lua: script name %q: want lowercase letters, digits and _", name))
	}
	s := &Script{Name: name, body: source, includes: resolveIncludes(name, source)}
	for _, o := range opts {
		o(s)
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[name]; dup {
		panic(fmt.Sprintf("lua: script %q registered twice", name))
	}
	libCache.Store(nil) // the libraries are built again with this script
	s.duration, s.errors = scriptDuration.WithLabelValues(name), scriptErrors.WithLabelValues(name)
	registry.m[name] = s
	return s
}

// Option is a property of a script New registers.
type Option func(*Script)

// ReadOnly marks a script that never writes (see Script.readOnly).
func ReadOnly(s *Script) { s.readOnly = true }

// FromFS registers script name (name.lua in fsys, a module's embedded
// files) as New does; a missing file panics at init.
func FromFS(fsys fs.FS, name string, opts ...Option) *Script {
	body, err := fs.ReadFile(fsys, name+".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: %s.lua not embedded: %v", name, err))
	}
	return New(name, string(body), opts...)
}

// LibraryFromFS registers library name (name.lua in fsys) as NewLibrary
// does.
func LibraryFromFS(fsys fs.FS, name string) {
	body, err := fs.ReadFile(fsys, name+".lua")
	if err != nil {
		panic(fmt.Sprintf("lua: library %s.lua not embedded: %v", name, err))
	}
	NewLibrary(name, string(body))
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// SHA1 is the script's digest, for EVALSHA.
func (s *Script) SHA1() string {
	s.resolve()
	return s.sha1
}

// All returns every script, sorted by name.
func All() []*Script {
	registry.Lock()
	defer registry.Unlock()
	out := make([]*Script, 0, len(registry.m))
	for _, s := range registry.m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Named is the registered script called name (nil when there is none):
// for tools and tests that run a module's script by hand.
func Named(name string) *Script {
	registry.Lock()
	defer registry.Unlock()
	return registry.m[name]
}

// Exec runs the script (FCALL where Redis has Functions, else EVALSHA,
// then EVAL on NOSCRIPT) and records its latency and errors by script name.
func (s *Script) Exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	observe(s, keys, args)
	start := time.Now()
	res := s.run(ctx, c, keys, args)
	s.duration.Observe(time.Since(start).Seconds())
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		s.errors.Inc()
	}
	return res
}

// ExecThen runs the script as Exec does and, in the same round trip,
// then: a command on the same slot (a read of what the script wrote, say),
// which Redis runs right after the script. Both results are returned; when
// the script has to be sent again (a node without the library, NOSCRIPT)
// then is sent again after it (then builds the command: rueidis recycles a
// command once sent).
func (s *Script) ExecThen(ctx context.Context, c rueidis.Client, keys, args []string, then func() rueidis.Completed) (rueidis.RedisResult, rueidis.RedisResult) {
	observe(s, keys, args)
	start := time.Now()
	script, after := s.runThen(ctx, c, keys, args, then)
	s.duration.Observe(time.Since(start).Seconds())
	if err := script.Error(); err != nil && !rueidis.IsRedisNil(err) {
		s.errors.Inc()
	}
	return script, after
}

// Call is one run of a script in ExecMulti.
type Call struct {
	Keys, Args []string
}

// ExecMulti runs the script once per call in one pipeline (on a cluster
// client, rueidis sends each call to the node of its keys' slot): FCALL or
// EVALSHA as Exec, then one more pipeline for the calls a node could not
// serve (a library loaded, NOSCRIPT). Each call counts in the script's
// metrics with the pipeline's latency.
func (s *Script) ExecMulti(ctx context.Context, c rueidis.Client, calls ...Call) []rueidis.RedisResult {
	for _, call := range calls {
		observe(s, call.Keys, call.Args)
	}
	start := time.Now()
	res := s.runMulti(ctx, c, calls)
	d := time.Since(start).Seconds()
	for _, r := range res {
		s.duration.Observe(d)
		if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
			s.errors.Inc()
		}
	}
	return res
}

// observer is the function Observe installed, or nil.
var observer atomic.Pointer[func(s *Script, keys, args []string)]

// Observe has f see every call of every script (the script, its KEYS and
// ARGV, which f must not change) as Exec, ExecThen and ExecMulti send it,
// until stop: for tests that replay a workload (on both call paths, say).
// One observer at a time.
func Observe(f func(s *Script, keys, args []string)) (stop func()) {
	observer.Store(&f)
	return func() { observer.Store(nil) }
}

func observe(s *Script, keys, args []string) {
	if f := observer.Load(); f != nil {
		(*f)(s, keys, args)
	}
}

// Load makes sure every node holds every script, proving Redis accepts
// them (readiness) and saving the first EVAL after a restart: one SCRIPT
// EXISTS per node, then SCRIPT LOAD of only the scripts a node lacks (all
// of them after a restart or a SCRIPT FLUSH). Then the same for the
// function libraries (FUNCTION LIST of each, FUNCTION LOAD of the missing,
// one FCALL_RO to prove the user may call them), which decides the client's
// call path (Path): FCALL, or EVALSHA where Redis refuses any of it.
// Readiness runs it on every check, so a check does not recompile what a
// node already holds.
func Load(ctx context.Context, c rueidis.Client) error {
	scripts := All()
	shas := make([]string, len(scripts))
	for i, s := range scripts {
		shas[i] = s.SHA1()
	}
	for addr, node := range c.Nodes() {
		held, err := node.Do(ctx, node.B().ScriptExists().Sha1(shas...).Build()).AsIntSlice()
		if err != nil {
			return fmt.Errorf("script exists on %s: %w", addr, err)
		}
		var missing []*Script
		for i, s := range scripts {
			if i >= len(held) || held[i] != 1 {
				missing = append(missing, s)
			}
		}
		if len(missing) == 0 {
			continue
		}
		cmds := make(rueidis.Commands, 0, len(missing))
		for _, s := range missing {
			cmds = append(cmds, node.B().ScriptLoad().Script(s.Source()).Build())
		}
		for i, res := range node.DoMulti(ctx, cmds...) {
			if err := res.Error(); err != nil {
				return fmt.Errorf("script load %s on %s: %w", missing[i].Name, addr, err)
			}
		}
	}
	return loadFunctions(ctx, c)
}

var (
	scriptDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sidecar_redis_script_duration_seconds",
		Help:    "Latency of Redis Lua scripts (round trip included) by script.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
	}, []string{"script"})
	scriptErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecar_redis_script_errors_total",
		Help: "Redis Lua script calls that failed (outage, timeout or script error) by script.",
	}, []string{"script"})
)

// Collectors returns the script metrics; every script has its series from
// the start (created when the script is loaded).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{scriptDuration, scriptErrors}
}
