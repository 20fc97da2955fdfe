package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// Histories are small enough for porcupine to decide in milliseconds; the
// timeout only guards against a model mistake making it search forever.
const (
	linClients   = 5
	linOps       = 60
	checkTimeout = time.Minute
)

// recorder collects a concurrent history with one monotonic clock.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) now() int64 { return time.Since(r.start).Nanoseconds() }

func (r *recorder) add(client int, in any, call int64, out any) {
	ret := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// check runs porcupine over the history and, when it is not linearizable,
// writes the visualization to a directory that outlives the test.
func check(t *testing.T, model porcupine.Model, ops []porcupine.Operation) {
	t.Helper()
	began := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, ops, checkTimeout)
	t.Logf("porcupine: %d operations, %s in %s", len(ops), res, time.Since(began).Round(time.Millisecond))
	if res == porcupine.Ok {
		return
	}
	dir, err := os.MkdirTemp("", "porcupine-")
	if err != nil {
		t.Fatalf("history is %s; no directory for the visualization: %v", res, err)
	}
	path := filepath.Join(dir, t.Name()+".html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		t.Errorf("visualize: %v", err)
	}
	t.Errorf("history is %s (not linearizable, or undecided within %s); visualization: %s", res, checkTimeout, path)
}

// partitionBy splits a history by a key of each operation's input.
func partitionBy(key func(in any) string) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(ops []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range ops {
			k := key(op.Input)
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	}
}

// ---- locks ----------------------------------------------------------------

type lockIn struct {
	Name  string
	Op    string // acquire, release, refresh, inspect
	Token string // release and refresh: the token presented
}

type lockOut struct {
	Status int
	Code   string
	Token  string // acquire: the token granted
	Fence  int64  // acquire, refresh, inspect: the fencing token
	Held   bool   // inspect
}

// lockState is one lock: its holder's token ("" when free), the holder's
// fencing token, and the highest fencing token ever granted.
type lockState struct {
	Holder string
	Fence  int64
	Last   int64
}

// lockModel is docs/locks.md for one name with wait_ms 0: an acquire
// succeeds iff the lock is free, with a fencing token above every earlier
// grant; release by the holder frees it, by anyone else is 409 not_owner
// (404 not_held when free) and changes nothing; refresh succeeds only for
// the holder; inspect sees the holder and its fencing token.
var lockModel = porcupine.Model{
	Partition: partitionBy(func(in any) string { return in.(lockIn).Name }),
	Init:      func() any { return lockState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(lockState), input.(lockIn), output.(lockOut)
		switch in.Op {
		case "acquire":
			if s.Holder == "" {
				ok := out.Status == http.StatusOK && out.Token != "" && out.Fence > s.Last
				return ok, lockState{Holder: out.Token, Fence: out.Fence, Last: out.Fence}
			}
			return out.Status == http.StatusConflict && out.Code == "lock_held", s
		case "release":
			switch {
			case s.Holder == "":
				return out.Status == http.StatusNotFound && out.Code == "not_held", s
			case s.Holder == in.Token:
				return out.Status == http.StatusOK, lockState{Last: s.Last}
			default:
				return out.Status == http.StatusConflict && out.Code == "not_owner", s
			}
		case "refresh":
			if s.Holder != "" && s.Holder == in.Token {
				return out.Status == http.StatusOK && out.Fence == s.Fence, s
			}
			return out.Status == http.StatusConflict && out.Code == "lock_lost", s
		case "inspect":
			if s.Holder == "" {
				return out.Status == http.StatusOK && !out.Held, s
			}
			return out.Status == http.StatusOK && out.Held && out.Fence == s.Fence, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(lockIn), output.(lockOut)
		tok := func(s string) string { return s[:min(6, len(s))] }
		switch in.Op {
		case "acquire":
			if out.Status == http.StatusOK {
				return fmt.Sprintf("%s acquire -> %s fence %d", in.Name, tok(out.Token), out.Fence)
			}
			return fmt.Sprintf("%s acquire -> %d %s", in.Name, out.Status, out.Code)
		case "inspect":
			return fmt.Sprintf("%s inspect -> held %v fence %d", in.Name, out.Held, out.Fence)
		}
		return fmt.Sprintf("%s %s(%s) -> %d %s", in.Name, in.Op, tok(in.Token), out.Status, out.Code)
	},
	DescribeState: func(state any) string {
		s := state.(lockState)
		if s.Holder == "" {
			return fmt.Sprintf("free (last fence %d)", s.Last)
		}
		return fmt.Sprintf("held by %s, fence %d", s.Holder[:min(6, len(s.Holder))], s.Fence)
	},
}

// TestLocksLinearizable drives acquire (wait_ms 0), release, refresh and
// inspect from several clients at two lock names through a real host and
// checks the history against lockModel. Clients also present tokens they
// no longer hold (and one never granted), so the not_owner and not_held
// answers are part of the history.
func TestLocksLinearizable(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := startHost(t, srv, nil)
	c := sidecartest.NewClient(t, h.API)
	rec := newRecorder()
	names := []string{"lin-a", "lin-b"}

	var wg sync.WaitGroup
	for cl := range linClients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(cl), 5))
			held := map[string]string{}                                      // name -> token this client holds
			stale := map[string][]string{"lin-a": {strings.Repeat("0", 32)}} // tokens it held once
			stale["lin-b"] = stale["lin-a"]
			for range linOps {
				name := names[rng.IntN(len(names))]
				in := lockIn{Name: name}
				p := rng.IntN(100)
				switch tok := held[name]; {
				case tok != "" && p < 50:
					in.Op, in.Token = "release", tok
				case tok != "" && p < 75:
					in.Op, in.Token = "refresh", tok
				case tok != "":
					in.Op = "inspect"
				case p < 55:
					in.Op = "acquire"
				case p < 75:
					in.Op = "inspect"
				default:
					in.Op = "release"
					if p >= 90 {
						in.Op = "refresh"
					}
					old := stale[name]
					in.Token = old[rng.IntN(len(old))]
				}
				call := rec.now()
				out, err := lockCall(c, in)
				if err != nil {
					t.Errorf("client %d %s %s: %v", cl, in.Op, name, err)
					return
				}
				rec.add(cl, in, call, out)
				switch {
				case in.Op == "acquire" && out.Status == http.StatusOK:
					held[name] = out.Token
				case in.Op == "release" && in.Token == held[name]:
					delete(held, name)
					stale[name] = append(slices.Clone(stale[name]), in.Token)
				}
			}
			for name, tok := range held { // leave the locks free, in the history too
				in := lockIn{Name: name, Op: "release", Token: tok}
				call := rec.now()
				out, err := lockCall(c, in)
				if err != nil {
					t.Errorf("client %d final release %s: %v", cl, name, err)
					return
				}
				rec.add(cl, in, call, out)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	grants := 0
	for _, op := range rec.ops {
		if op.Input.(lockIn).Op == "acquire" && op.Output.(lockOut).Status == http.StatusOK {
			grants++
		}
	}
	t.Logf("%d lock operations, %d grants", len(rec.ops), grants)
	if grants < 10 {
		t.Errorf("only %d grants: the history exercises too little", grants)
	}
	check(t, lockModel, rec.ops)
}

// lockCall runs one lock operation and decodes what the model needs. Any
// answer outside the model (5xx, transport errors) is an error.
func lockCall(c *sidecartest.Client, in lockIn) (lockOut, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	path := "/v1/locks/" + in.Name
	var r sidecartest.Reply
	switch in.Op {
	case "acquire":
		r = c.Send(ctx, "POST", path, `{"ttl_ms":600000,"wait_ms":0}`)
	case "release":
		r = c.Send(ctx, "DELETE", path, fmt.Sprintf(`{"token":%q}`, in.Token))
	case "refresh":
		r = c.Send(ctx, "POST", path+"/refresh", fmt.Sprintf(`{"token":%q}`, in.Token))
	case "inspect":
		r = c.Send(ctx, "GET", path, "")
	}
	if r.Err != nil {
		return lockOut{}, r.Err
	}
	out := lockOut{Status: r.Status, Code: r.Code()}
	switch r.Status {
	case http.StatusOK:
		var body struct {
			Token        string `json:"token"`
			FencingToken int64  `json:"fencing_token"`
			Held         bool   `json:"held"`
		}
		if !jsonInto(r.Body, &body) {
			return out, fmt.Errorf("undecodable answer %s", r)
		}
		out.Token, out.Fence, out.Held = body.Token, body.FencingToken, body.Held
	case http.StatusConflict, http.StatusNotFound:
	default:
		return out, fmt.Errorf("answer outside the model: %s", r)
	}
	return out, nil
}

// TestLockModelRejectsViolations keeps lockModel from passing everything:
// two overlapping grants, a reissued fencing token, and a release by a
// non-owner that freed the lock must each be found illegal.
func TestLockModelRejectsViolations(t *testing.T) {
	grant := func(client int, call, ret int64, tok string, fence int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: lockIn{Name: "x", Op: "acquire"}, Call: call, Return: ret,
			Output: lockOut{Status: http.StatusOK, Token: tok, Fence: fence}}
	}
	release := func(client int, call, ret int64, tok string, status int, code string) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: lockIn{Name: "x", Op: "release", Token: tok}, Call: call, Return: ret,
			Output: lockOut{Status: status, Code: code}}
	}
	bad := map[string][]porcupine.Operation{
		"two holders":     {grant(0, 0, 10, "a", 1), grant(1, 20, 30, "b", 2)},
		"fence reissued":  {grant(0, 0, 10, "a", 1), release(0, 20, 30, "a", 200, ""), grant(1, 40, 50, "b", 1)},
		"non-owner frees": {grant(0, 0, 10, "a", 1), release(1, 20, 30, "b", 200, "")},
	}
	for name, ops := range bad {
		if porcupine.CheckOperations(lockModel, ops) {
			t.Errorf("%s: accepted", name)
		}
	}
	good := []porcupine.Operation{grant(0, 0, 10, "a", 1), release(1, 5, 30, "b", 409, "not_owner"),
		release(0, 20, 30, "a", 200, ""), grant(1, 40, 50, "b", 7)}
	if !porcupine.CheckOperations(lockModel, good) {
		t.Error("a legal history was rejected")
	}
}

// ---- sessions -------------------------------------------------------------

type sessIn struct {
	Session string
	Op      string // append, feedback, get, list
	QAID    string
	Score   int // feedback: 1-5
	N       int // list: last_n
}

type sessOut struct {
	Status int
	Score  int    // get, feedback: the entry's feedback_score (0 = null)
	List   string // list: "qa_id=score,..." oldest first
}

// A session's state is its entries oldest first, "qa_id=score" joined by
// commas (score 0 = null): a string, so porcupine can compare and cache it.
func sessEntries(state string) []string {
	if state == "" {
		return nil
	}
	return strings.Split(state, ",")
}

func sessFind(entries []string, id string) int {
	for i, e := range entries {
		if strings.HasPrefix(e, id+"=") {
			return i
		}
	}
	return -1
}

// sessionModel is one session as a sequential list: an append stores a new
// qa_id at the end (201) and answers a known one with 200 and no change;
// feedback sets the score of an existing entry (200) or is 404; a get
// answers the entry as it is or 404; last_n lists the newest n in order.
var sessionModel = porcupine.Model{
	Partition: partitionBy(func(in any) string { return in.(sessIn).Session }),
	Init:      func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(string), input.(sessIn), output.(sessOut)
		entries := sessEntries(s)
		i := sessFind(entries, in.QAID)
		switch in.Op {
		case "append":
			if i >= 0 {
				return out.Status == http.StatusOK, s
			}
			return out.Status == http.StatusCreated, strings.Join(append(slices.Clone(entries), in.QAID+"=0"), ",")
		case "feedback":
			if i < 0 {
				return out.Status == http.StatusNotFound, s
			}
			next := slices.Clone(entries)
			next[i] = in.QAID + "=" + strconv.Itoa(in.Score)
			return out.Status == http.StatusOK && out.Score == in.Score, strings.Join(next, ",")
		case "get":
			if i < 0 {
				return out.Status == http.StatusNotFound, s
			}
			return out.Status == http.StatusOK && entries[i] == in.QAID+"="+strconv.Itoa(out.Score), s
		case "list":
			want := strings.Join(entries[max(0, len(entries)-in.N):], ",")
			return out.Status == http.StatusOK && out.List == want, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(sessIn), output.(sessOut)
		switch in.Op {
		case "append", "get":
			return fmt.Sprintf("%s %s(%s) -> %d score %d", in.Session, in.Op, in.QAID, out.Status, out.Score)
		case "feedback":
			return fmt.Sprintf("%s feedback(%s, %d) -> %d", in.Session, in.QAID, in.Score, out.Status)
		}
		return fmt.Sprintf("%s last_n=%d -> [%s]", in.Session, in.N, out.List)
	},
	DescribeState: func(state any) string { return "[" + state.(string) + "]" },
}

// TestSessionLinearizable drives appends (new qa_ids and retries of ones
// already sent, by anyone), feedback, get-by-qa_id and last_n lists from
// several clients at two sessions through a real host, and checks the
// history against sessionModel.
func TestSessionLinearizable(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := startHost(t, srv, nil)
	c := sidecartest.NewClient(t, h.API)
	rec := newRecorder()
	sessionNames := []string{"lin1", "lin2"}

	var mu sync.Mutex
	sent := map[string][]string{} // session -> qa_ids any client has sent
	var wg sync.WaitGroup
	for cl := range linClients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(cl), 9))
			for i := range linOps {
				in := sessIn{Session: sessionNames[rng.IntN(len(sessionNames))]}
				mu.Lock()
				known := sent[in.Session]
				pick := func() string {
					if len(known) == 0 || rng.IntN(10) == 0 {
						return fmt.Sprintf("never-%d", rng.IntN(3)) // 404s
					}
					return known[rng.IntN(len(known))]
				}
				switch p := rng.IntN(100); {
				case p < 35:
					in.Op, in.QAID = "append", fmt.Sprintf("c%d-%d", cl, i)
					sent[in.Session] = append(known, in.QAID)
				case p < 45:
					in.Op, in.QAID = "append", pick() // a retry, maybe racing the first
				case p < 65:
					in.Op, in.QAID, in.Score = "feedback", pick(), 1+rng.IntN(5)
				case p < 85:
					in.Op, in.QAID = "get", pick()
				default:
					in.Op, in.N = "list", []int{1, 3, 1000}[rng.IntN(3)]
				}
				mu.Unlock()
				call := rec.now()
				out, err := sessCall(c, in)
				if err != nil {
					t.Errorf("client %d %s %s: %v", cl, in.Op, in.QAID, err)
					return
				}
				rec.add(cl, in, call, out)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d session operations", len(rec.ops))
	check(t, sessionModel, rec.ops)
}

type entryJSON struct {
	QAID  string `json:"qa_id"`
	Score *int   `json:"feedback_score"`
}

func (e entryJSON) score() int {
	if e.Score == nil {
		return 0
	}
	return *e.Score
}

// sessCall runs one session operation and decodes what the model needs.
func sessCall(c *sidecartest.Client, in sessIn) (sessOut, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	base := "/v1/users/lin/sessions/" + in.Session + "/entries"
	var r sidecartest.Reply
	switch in.Op {
	case "append":
		r = c.Send(ctx, "POST", base, fmt.Sprintf(`{"qa_id":%q,"question":"q","answer":"a"}`, in.QAID))
	case "feedback":
		r = c.Send(ctx, "PUT", base+"/"+in.QAID+"/feedback", fmt.Sprintf(`{"feedback_score":%d}`, in.Score))
	case "get":
		r = c.Send(ctx, "GET", base+"/"+in.QAID, "")
	case "list":
		r = c.Send(ctx, "GET", base+"?last_n="+strconv.Itoa(in.N), "")
	}
	if r.Err != nil {
		return sessOut{}, r.Err
	}
	out := sessOut{Status: r.Status}
	switch {
	case r.Status == http.StatusNotFound:
	case r.Status/100 != 2:
		return out, fmt.Errorf("answer outside the model: %s", r)
	case in.Op == "list":
		var list []entryJSON
		if err := json.Unmarshal([]byte(r.Body), &list); err != nil {
			return out, fmt.Errorf("list %s: %v", r, err)
		}
		parts := make([]string, len(list))
		for i, e := range list {
			parts[i] = e.QAID + "=" + strconv.Itoa(e.score())
		}
		out.List = strings.Join(parts, ",")
	default:
		var e entryJSON
		if err := json.Unmarshal([]byte(r.Body), &e); err != nil || e.QAID != in.QAID {
			return out, fmt.Errorf("entry answer %s (%v)", r, err)
		}
		out.Score = e.score()
	}
	return out, nil
}

// TestSessionModelRejectsViolations keeps sessionModel honest: a lost
// append, a stale read after feedback and a reordered list are illegal.
func TestSessionModelRejectsViolations(t *testing.T) {
	op := func(call, ret int64, in sessIn, out sessOut) porcupine.Operation {
		in.Session = "s"
		return porcupine.Operation{Input: in, Call: call, Return: ret, Output: out}
	}
	bad := map[string][]porcupine.Operation{
		"lost append": {op(0, 10, sessIn{Op: "append", QAID: "a"}, sessOut{Status: 201}),
			op(20, 30, sessIn{Op: "list", N: 10}, sessOut{Status: 200, List: ""})},
		"stale read": {op(0, 10, sessIn{Op: "append", QAID: "a"}, sessOut{Status: 201}),
			op(20, 30, sessIn{Op: "feedback", QAID: "a", Score: 4}, sessOut{Status: 200, Score: 4}),
			op(40, 50, sessIn{Op: "get", QAID: "a"}, sessOut{Status: 200, Score: 0})},
		"reordered": {op(0, 10, sessIn{Op: "append", QAID: "a"}, sessOut{Status: 201}),
			op(20, 30, sessIn{Op: "append", QAID: "b"}, sessOut{Status: 201}),
			op(40, 50, sessIn{Op: "list", N: 10}, sessOut{Status: 200, List: "b=0,a=0"})},
		"double create": {op(0, 10, sessIn{Op: "append", QAID: "a"}, sessOut{Status: 201}),
			op(5, 30, sessIn{Op: "append", QAID: "a"}, sessOut{Status: 201})},
	}
	for name, ops := range bad {
		if porcupine.CheckOperations(sessionModel, ops) {
			t.Errorf("%s: accepted", name)
		}
	}
}
