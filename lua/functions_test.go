package lua_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The library names carry a digest of their text, so pinning the names
// pins the libraries: a change to a script or library, or to how the
// libraries are made, shows here (go test ./lua -update, then review).
func TestLibrariesPinned(t *testing.T) {
	var b strings.Builder
	for _, lib := range lua.Libraries() {
		fmt.Fprintf(&b, "%s %d\n", lib.Name, len(lib.Source))
	}
	if *update {
		if err := os.WriteFile("testdata/libraries.txt", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/libraries.txt")
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Fatalf("libraries changed; review and run go test ./lua -update\n got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// script is the registered script of name: a module's too, as the test
// imports every stock module (modules_test.go).
func script(t testing.TB, name string) *lua.Script {
	t.Helper()
	for _, s := range lua.All() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no script %q registered", name)
	return nil
}

// lockCall is one lock_acquire of name (a fresh lock: answers {1, fence, now}).
func lockCall(name string) lua.Call {
	return lua.Call{Keys: []string{name, "{" + name + "}:fence", "{" + name + "}:meta"}, Args: []string{"tok", "60000", "o", "60000"}}
}

// acquired checks that res is the answer of a granted lock_acquire.
func acquired(t *testing.T, what string, res rueidis.RedisResult) {
	t.Helper()
	v, err := res.AsIntSlice()
	if err != nil || len(v) != 3 || v[0] != 1 || v[1] < 1 {
		t.Fatalf("%s: got %v %v, want {1, fence, now}", what, v, err)
	}
}

// scriptCalls counts FCALL/FCALL_RO and EVALSHA/EVAL calls on every node of c.
func scriptCalls(t *testing.T, c rueidis.Client) (fcall, evalsha int) {
	t.Helper()
	re := regexp.MustCompile(`cmdstat_(fcall|fcall_ro|evalsha|eval):calls=(\d+)`)
	for _, node := range c.Nodes() {
		info, err := node.Do(t.Context(), node.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(info, -1) {
			n, _ := strconv.Atoi(m[2])
			if strings.HasPrefix(m[1], "fcall") {
				fcall += n
			} else {
				evalsha += n
			}
		}
	}
	return fcall, evalsha
}

// lockCalls runs lock_acquire of n fresh locks through Exec, ExecThen and
// ExecMulti (on a cluster, spread over every master).
func lockCalls(t *testing.T, c rueidis.Client, prefix string, n int) {
	t.Helper()
	call := lockCall(prefix + "-exec")
	acquired(t, "Exec", script(t, "lock_acquire").Exec(t.Context(), c, call.Keys, call.Args))
	call = lockCall(prefix + "-then")
	res, after := script(t, "lock_acquire").ExecThen(t.Context(), c, call.Keys, call.Args, func() rueidis.Completed {
		return c.B().Get().Key(call.Keys[0]).Build()
	})
	acquired(t, "ExecThen", res)
	if got, err := after.ToString(); err != nil || got != "tok" {
		t.Fatalf("ExecThen's command: got %q %v, want the token", got, err)
	}
	calls := make([]lua.Call, n)
	for i := range calls {
		calls[i] = lockCall(fmt.Sprintf("%s-multi-%d", prefix, i))
	}
	for i, r := range script(t, "lock_acquire").ExecMulti(t.Context(), c, calls...) {
		acquired(t, fmt.Sprintf("ExecMulti call %d", i), r)
	}
}

// Redis 7 takes FCALL, on a cluster too; miniredis has no FUNCTION and
// takes EVALSHA. Either way every kind of call answers.
func TestCallPath(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		c := srv.Client(t)
		if got := lua.Path(c); got != "unknown" {
			t.Fatalf("path before Load: %q", got)
		}
		if err := lua.Load(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		if srv.Mini != nil {
			lockCalls(t, c, "path", 16)
			if got := lua.Path(c); !strings.HasPrefix(got, "evalsha (") {
				t.Fatalf("miniredis: path %q, want evalsha (...)", got)
			}
			return
		}
		fcalls0, evals0 := scriptCalls(t, c)
		lockCalls(t, c, "path", 16)
		fcalls, evals := scriptCalls(t, c)
		if got := lua.Path(c); got != "functions" {
			t.Fatalf("path %q, want functions", got)
		}
		if fcalls-fcalls0 != 18 || evals != evals0 {
			t.Fatalf("got %d FCALLs and %d EVALSHAs, want 18 FCALLs and none", fcalls-fcalls0, evals-evals0)
		}
	})
}

// After FUNCTION FLUSH on every node (or on one node of a cluster: a new
// or failed-over master) the next calls answer: the node is given the
// libraries again and the calls still go through FCALL.
func TestFunctionFlushRecovers(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		if srv.Mini != nil {
			t.Skip("miniredis has no FUNCTION")
		}
		c := srv.Client(t)
		if err := lua.Load(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		nodes := c.Nodes()
		for round, flush := range []int{len(nodes), 1} {
			n := 0
			for _, node := range nodes {
				if n == flush {
					break
				}
				if err := node.Do(t.Context(), node.B().FunctionFlush().Build()).Error(); err != nil {
					t.Fatal(err)
				}
				n++
			}
			_, evals0 := scriptCalls(t, c)
			lockCalls(t, c, fmt.Sprintf("flush%d", round), 16)
			if _, evals := scriptCalls(t, c); evals != evals0 {
				t.Errorf("round %d: %d calls went through EVALSHA", round, evals-evals0)
			}
			for addr, node := range nodes {
				for _, lib := range lua.Libraries() {
					held, err := node.Do(t.Context(), node.B().FunctionList().Libraryname(lib.Name).Build()).ToArray()
					if err != nil || len(held) != 1 {
						t.Fatalf("round %d: %s lacks %s after the calls: %v %v", round, addr, lib.Name, held, err)
					}
				}
			}
			if got := lua.Path(c); got != "functions" {
				t.Fatalf("round %d: path %q, want functions", round, got)
			}
		}
	})
}

// A client no Load has seen, on a server that holds no library, calls
// through FCALL: the first call loads the libraries.
func TestNodeWithoutLibrary(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	c := srv.Client(t)
	lockCalls(t, c, "fresh", 4)
	if got := lua.Path(c); got != "functions" {
		t.Fatalf("path %q, want functions", got)
	}
	// 6 calls, the first one twice (before and after the load), and the
	// load's probe
	if fcalls, evals := scriptCalls(t, c); fcalls != 8 || evals != 0 {
		t.Fatalf("got %d FCALLs and %d EVALSHAs, want 8 FCALLs", fcalls, evals)
	}
}

// A user whose ACL refuses FCALL (FUNCTION allowed or not) takes EVALSHA,
// whether Load found out or the first call did; its calls answer alike.
func TestRefusedFunctionsFallBack(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	for _, acl := range []string{"-fcall -fcall_ro", "-function -fcall -fcall_ro", "-function"} {
		for _, load := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s load=%v", acl, load), func(t *testing.T) {
				user := fmt.Sprintf("u%d", time.Now().UnixNano())
				if reply, err := redisstoretest.RawCommand(srv.Addr, "ACL SETUSER "+user+" on >pw ~* &* +@all "+acl, 5*time.Second); err != nil || reply != "+OK" {
					t.Fatalf("ACL SETUSER: %q %v", reply, err)
				}
				c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, Username: user, Password: "pw",
					DisableCache: true, DisableRetry: true, ForceSingleClient: true})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if load {
					if err := lua.Load(t.Context(), c); err != nil {
						t.Fatal(err)
					}
				}
				lockCalls(t, c, user, 4)
				want := "evalsha ("
				if acl == "-function" && !load {
					want = "functions" // FCALL allowed, and the libraries are held
				}
				if got := lua.Path(c); !strings.HasPrefix(got, want) {
					t.Fatalf("path %q, want %s...", got, want)
				}
			})
		}
	}
}

// Over maxmemory a no-writes script still answers through FCALL_RO, as a
// read-only script did through EVALSHA, and a writing one is refused with
// OOM before it runs, writing nothing.
func TestReadsAnswerOverMaxmemory(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	c := srv.Client(t)
	if err := lua.Load(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	set := func(v string) {
		t.Helper()
		if err := c.Do(t.Context(), c.B().ConfigSet().ParameterValue().ParameterValue("maxmemory", v).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	set("1")
	defer set("0")
	got, err := script(t, "lock_inspect").Exec(t.Context(), c, []string{"oom", "{oom}:meta"}, nil).AsIntSlice()
	if err != nil || len(got) != 1 || got[0] != 0 {
		t.Fatalf("lock_inspect over maxmemory: got %v %v, want {0}", got, err)
	}
	call := lockCall("oom")
	if err := script(t, "lock_acquire").Exec(t.Context(), c, call.Keys, call.Args).Error(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("lock_acquire over maxmemory: got %v, want OOM", err)
	}
	if n, err := c.Do(t.Context(), c.B().Exists().Key(call.Keys...).Build()).AsInt64(); err != nil || n != 0 {
		t.Fatalf("keys after the refused acquire: %d %v, want none", n, err)
	}
	if got := lua.Path(c); got != "functions" {
		t.Fatalf("path %q, want functions", got)
	}
}
