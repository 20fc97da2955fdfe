package client_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// The sidecar TestMain runs for the examples and tests: every module, on a
// fresh Redis (a real redis-server when installed, required by
// REQUIRE_REAL_REDIS=1).
var (
	sidecarURL string // its API, "http://127.0.0.1:7480" in a pod
	redisSrv   *redisstoretest.Server
)

func TestMain(m *testing.M) {
	flag.Parse() // sidecartest reads testing.Verbose
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	tb := &mainTB{}
	defer tb.cleanup()
	h, srv, err := startHost(tb, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start sidecar:", err)
		return 1
	}
	sidecarURL, redisSrv = h.API, srv
	return m.Run()
}

// startHost starts a Redis and a sidecar with every module, stopped by tb's
// cleanups. With a mainTB, a failure is returned as an error.
func startHost(tb testing.TB, env envconf.Env) (h *sidecartest.Host, srv *redisstoretest.Server, err error) {
	if m, ok := tb.(*mainTB); ok {
		defer m.recover(&err)
	}
	srv = redisstoretest.New(tb)
	return sidecartest.Start(tb, srv, env, modules.All()...), srv, nil
}

// mainTB lets TestMain, which has no *testing.T, use the project's test
// rigs (redisstoretest, sidecartest): it implements the testing.TB methods
// they call; a Fatal or Skip panics and recover turns it into an error.
type mainTB struct {
	testing.TB // nil: any other method panics
	cleanups   []func()
}

type tbFailure string

func (t *mainTB) Helper()                         {}
func (t *mainTB) Context() context.Context        { return context.Background() }
func (t *mainTB) Name() string                    { return "TestMain" }
func (t *mainTB) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }
func (t *mainTB) Log(args ...any)                 { fmt.Fprintln(os.Stderr, args...) }
func (t *mainTB) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *mainTB) Fatal(args ...any)               { panic(tbFailure(fmt.Sprint(args...))) }
func (t *mainTB) Fatalf(format string, args ...any) {
	panic(tbFailure(fmt.Sprintf(format, args...)))
}
func (t *mainTB) Skip(args ...any) { panic(tbFailure("skipped: " + fmt.Sprint(args...))) }

func (t *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "clienttest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// recover turns a Fatal's panic into *err.
func (t *mainTB) recover(err *error) {
	if r := recover(); r != nil {
		f, ok := r.(tbFailure)
		if !ok {
			panic(r)
		}
		*err = errors.New(string(f))
	}
}

// cleanup runs the cleanups, last registered first.
func (t *mainTB) cleanup() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
}
