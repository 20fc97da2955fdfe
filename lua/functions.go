package lua

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/redis/rueidis"
)

// The call path of a client: FCALL of the script's function (Redis 7 and
// later), or EVALSHA (miniredis, Redis 6, a user whose ACL refuses
// FUNCTION or FCALL, a server that refused to load a library). Load decides
// it for each client it sees; a client Load has not seen tries FCALL and
// keeps to EVALSHA from the first refusal of the command.
const (
	pathUnknown int32 = iota
	pathFunctions
	pathEvalsha
)

// Path says which call path c takes: "functions" (FCALL), "evalsha" with
// the reason (the refusal that decided it), or "unknown" before a Load or
// a call on c.
func Path(c rueidis.Client) string {
	st := stateOf(c)
	if st == nil {
		return "unknown"
	}
	switch st.path.Load() {
	case pathFunctions:
		return "functions"
	case pathEvalsha:
		if why, _ := st.why.Load().(string); why != "" {
			return "evalsha (" + why + ")"
		}
		return "evalsha"
	}
	return "unknown"
}

// maxClients bounds the clients whose path is remembered: past it the
// memory is cleared and each client finds its path again (a wrong guess
// costs one refused FCALL, never a wrong answer).
const maxClients = 256

type pathState struct {
	path atomic.Int32
	why  atomic.Value // string: why EVALSHA
}

var paths struct {
	m sync.Map // weak.Pointer to the client -> *pathState
	n atomic.Int32
}

// clientKey identifies a client without keeping it alive (a client renewed
// after an outage is a new one, and a new client never inherits the path
// of a collected one at the same address).
func clientKey(c rueidis.Client) weak.Pointer[byte] {
	if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && !v.IsNil() {
		return weak.Make((*byte)(v.UnsafePointer()))
	}
	return weak.Pointer[byte]{}
}

func stateOf(c rueidis.Client) *pathState {
	if v, ok := paths.m.Load(clientKey(c)); ok {
		return v.(*pathState)
	}
	return nil
}

func pathOf(c rueidis.Client) int32 {
	if st := stateOf(c); st != nil {
		return st.path.Load()
	}
	return pathUnknown
}

// setPath records c's path; why is the refusal that put it on EVALSHA.
func setPath(c rueidis.Client, p int32, why string) {
	st := stateOf(c)
	if st == nil {
		if paths.n.Add(1) > maxClients {
			paths.m.Clear()
			paths.n.Store(1)
		}
		v, _ := paths.m.LoadOrStore(clientKey(c), new(pathState))
		st = v.(*pathState)
	}
	st.why.Store(why)
	st.path.Store(p)
}

// fcallable returns how s is called through Functions on c, or false when
// c takes EVALSHA.
func (s *Script) fcallable(c rueidis.Client) (binding, bool) {
	if pathOf(c) == pathEvalsha {
		return binding{}, false
	}
	b, ok := libraries().by[s]
	return b, ok
}

// fcall builds the FCALL (FCALL_RO for a no-writes script) of keys, args.
func (b binding) fcall(c rueidis.Client, keys, args []string) rueidis.Completed {
	if b.ro {
		return c.B().FcallRo().Function(b.fn).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return c.B().Fcall().Function(b.fn).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// The outcomes of an FCALL that concern the call path.
const (
	fcallDone    = iota // an answer (a script's error included) or an outage
	fcallMissing        // ERR Function not found: the node lacks the library
	fcallRefused        // the server has no FCALL, or the ACL refuses it
)

func fcallOutcome(err error) int {
	rerr, ok := rueidis.IsRedisErr(err)
	if !ok {
		return fcallDone
	}
	msg := strings.TrimPrefix(rerr.Error(), "ERR ") // rueidis drops it, Redis sends it
	switch {
	case strings.HasPrefix(msg, "Function not found"):
		return fcallMissing
	case refusedCommand(msg, "fcall"), refusedCommand(msg, "fcall_ro"):
		return fcallRefused
	}
	return fcallDone
}

// refusedCommand reports whether Redis error msg says the server does not
// know command cmd (miniredis, Redis < 7) or the user may not run it.
func refusedCommand(msg, cmd string) bool {
	low := strings.ToLower(strings.TrimPrefix(msg, "ERR "))
	return (strings.HasPrefix(low, "unknown command") || strings.HasPrefix(low, "noperm")) &&
		(strings.Contains(low, "'"+cmd+"'") || strings.Contains(low, "`"+cmd+"`") || strings.Contains(low, "'"+cmd+"|"))
}

// loading serialises the loads after "Function not found": the callers
// that met it at once load the libraries once (the others find them held).
// A caller waits for its turn no longer than its context allows.
var loading = make(chan struct{}, 1)

// reload loads the libraries every node of c lacks after a call met
// "Function not found" (FUNCTION FLUSH, a new or failed-over node);
// whether they may be called now.
func reload(ctx context.Context, c rueidis.Client) bool {
	select {
	case loading <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	defer func() { <-loading }()
	return loadFunctions(ctx, c) == nil && pathOf(c) != pathEvalsha
}

// LoadFunctions is Load without the SCRIPT LOADs: it makes every node hold
// the function libraries and decides the client's call path (Path), at
// the cost of one FUNCTION LIST per library and one FCALL_RO per node when
// they are held. The host runs it at start to log the path.
func LoadFunctions(ctx context.Context, c rueidis.Client) error {
	return loadFunctions(ctx, c)
}

// loadFunctions makes every node of c hold every library and decides c's
// path: per node one FUNCTION LIST per library (no code), FUNCTION LOAD of
// the missing ones, then one FCALL_RO of the probe function (an ACL may
// allow FUNCTION and not FCALL). A node that refuses any of it (no FUNCTION
// command, an ACL, a library refused: OOM) puts c on EVALSHA; a replica
// refuses FUNCTION LOAD (READONLY) and gets the libraries from its master.
// Only an outage is an error.
func loadFunctions(ctx context.Context, c rueidis.Client) error {
	set := libraries()
	for addr, node := range c.Nodes() {
		cmds := make(rueidis.Commands, len(set.libs))
		for i, lib := range set.libs {
			cmds[i] = node.B().FunctionList().Libraryname(lib.name).Build()
		}
		var missing []*library
		for i, res := range node.DoMulti(ctx, cmds...) {
			held, err := res.ToArray()
			if err != nil {
				return evalshaUnlessOutage(c, fmt.Errorf("function list on %s: %w", addr, err))
			}
			if len(held) == 0 {
				missing = append(missing, set.libs[i])
			}
		}
		replica := false
		for _, lib := range missing {
			err := node.Do(ctx, node.B().FunctionLoad().Replace().FunctionCode(lib.source).Build()).Error()
			if rerr, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(rerr.Error(), "READONLY") {
				replica = true
				break
			}
			if err != nil {
				return evalshaUnlessOutage(c, fmt.Errorf("function load %s on %s: %w", lib.name, addr, err))
			}
		}
		if replica {
			continue
		}
		if err := node.Do(ctx, node.B().FcallRo().Function(set.probe).Numkeys(0).Build()).Error(); err != nil {
			return evalshaUnlessOutage(c, fmt.Errorf("fcall on %s: %w", addr, err))
		}
	}
	setPath(c, pathFunctions, "")
	return nil
}

// evalshaUnlessOutage puts c on EVALSHA when Redis refused err (an answer),
// and returns err only for an outage.
func evalshaUnlessOutage(c rueidis.Client, err error) error {
	var rerr *rueidis.RedisError
	if errors.As(err, &rerr) && !rerr.IsNil() {
		setPath(c, pathEvalsha, err.Error())
		return nil
	}
	return err
}

// fcallRetry reports whether an FCALL that answered err is worth sending
// once more: the node lacked the library and it is loaded now.
func fcallRetry(ctx context.Context, c rueidis.Client, err error) bool {
	return fcallOutcome(err) == fcallMissing && reload(ctx, c)
}

// fcallAnswered reports whether an FCALL that answered err is the call's
// result; if not, the call goes through EVALSHA (and c with it, when Redis
// refused the command).
func fcallAnswered(c rueidis.Client, err error) bool {
	switch fcallOutcome(err) {
	case fcallDone:
		if pathOf(c) == pathUnknown {
			setPath(c, pathFunctions, "")
		}
		return true
	case fcallRefused:
		setPath(c, pathEvalsha, err.Error())
	}
	return false
}

// run is one call of s: FCALL where c has Functions, after "Function not
// found" a load and one more FCALL, else (or then) EVALSHA with EVAL on
// NOSCRIPT.
func (s *Script) run(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	if b, ok := s.fcallable(c); ok {
		res := c.Do(ctx, b.fcall(c, keys, args))
		if fcallRetry(ctx, c, res.Error()) {
			res = c.Do(ctx, b.fcall(c, keys, args))
		}
		if fcallAnswered(c, res.Error()) {
			return res
		}
	}
	s.resolve()
	return s.lua.Exec(ctx, c, keys, args)
}

// runThen is run with then after the script in the same round trip.
func (s *Script) runThen(ctx context.Context, c rueidis.Client, keys, args []string, then func() rueidis.Completed) (rueidis.RedisResult, rueidis.RedisResult) {
	if b, ok := s.fcallable(c); ok {
		res := c.DoMulti(ctx, b.fcall(c, keys, args), then())
		if fcallRetry(ctx, c, res[0].Error()) {
			res = c.DoMulti(ctx, b.fcall(c, keys, args), then())
		}
		if fcallAnswered(c, res[0].Error()) {
			return res[0], res[1]
		}
	}
	res := c.DoMulti(ctx,
		c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(),
		then())
	script, after := res[0], res[1]
	if err, ok := rueidis.IsRedisErr(script.Error()); ok && err.IsNoScript() {
		script = c.Do(ctx, c.B().Eval().Script(s.Source()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
		after = c.Do(ctx, then())
	}
	return script, after
}

// runMulti is run for every call in one pipeline; the calls FCALL could
// not serve go through EVALSHA (EVAL on NOSCRIPT) together.
func (s *Script) runMulti(ctx context.Context, c rueidis.Client, calls []Call) []rueidis.RedisResult {
	res := make([]rueidis.RedisResult, len(calls))
	rest := make([]int, len(calls))
	for i := range rest {
		rest[i] = i
	}
	if b, ok := s.fcallable(c); ok {
		send := func(at []int) {
			cmds := make(rueidis.Commands, len(at))
			for j, i := range at {
				cmds[j] = b.fcall(c, calls[i].Keys, calls[i].Args)
			}
			for j, r := range c.DoMulti(ctx, cmds...) {
				res[at[j]] = r
			}
		}
		send(rest)
		var missing []int
		for i, r := range res {
			if fcallOutcome(r.Error()) == fcallMissing {
				missing = append(missing, i)
			}
		}
		if len(missing) > 0 && reload(ctx, c) {
			send(missing)
		}
		rest = rest[:0]
		for i, r := range res {
			if !fcallAnswered(c, r.Error()) {
				rest = append(rest, i)
			}
		}
	}
	if len(rest) == 0 {
		return res
	}
	cmds := make(rueidis.Commands, len(rest))
	for j, i := range rest {
		cmds[j] = c.B().Evalsha().Sha1(s.SHA1()).Numkeys(int64(len(calls[i].Keys))).Key(calls[i].Keys...).Arg(calls[i].Args...).Build()
	}
	for j, r := range c.DoMulti(ctx, cmds...) {
		res[rest[j]] = r
	}
	var again rueidis.Commands
	var at []int
	for _, i := range rest {
		if err, ok := rueidis.IsRedisErr(res[i].Error()); ok && err.IsNoScript() {
			again = append(again, c.B().Eval().Script(s.Source()).Numkeys(int64(len(calls[i].Keys))).Key(calls[i].Keys...).Arg(calls[i].Args...).Build())
			at = append(at, i)
		}
	}
	if len(again) > 0 {
		for j, r := range c.DoMulti(ctx, again...) {
			res[at[j]] = r
		}
	}
	return res
}
