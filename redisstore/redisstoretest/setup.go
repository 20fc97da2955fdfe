package redisstoretest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"
)

// Setup runs f with a testing.TB for code that has no *testing.T, such as
// a TestMain that starts one Redis and one sidecar for a package's tests
// and examples, so the rigs (New, NewCluster, sidecartest.Start) work there
// as in a test. A Fatal or Skip in f ends f and comes back as err. stop
// runs what f registered with Cleanup, last first: call it when the tests
// are done, after an error too.
func Setup(f func(tb testing.TB)) (stop func(), err error) {
	if !flag.Parsed() {
		flag.Parse() // the rigs read testing.Verbose
	}
	tb := &mainTB{}
	stop = tb.cleanup
	defer tb.recover(&err)
	f(tb)
	return stop, nil
}

// mainTB implements the testing.TB methods the rigs call; a Fatal or Skip
// panics and recover turns it into an error. An Error (from a cleanup, say)
// is printed: there is no test to fail.
type mainTB struct {
	testing.TB // nil: any other method panics
	cleanups   []func()
}

type tbFailure string

func (t *mainTB) Helper()                           {}
func (t *mainTB) Context() context.Context          { return context.Background() }
func (t *mainTB) Name() string                      { return "TestMain" }
func (t *mainTB) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *mainTB) Log(args ...any)                   { fmt.Fprintln(os.Stderr, args...) }
func (t *mainTB) Logf(format string, args ...any)   { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *mainTB) Error(args ...any)                 { t.Log(args...) }
func (t *mainTB) Errorf(format string, args ...any) { t.Logf(format, args...) }
func (t *mainTB) Fatal(args ...any)                 { panic(tbFailure(fmt.Sprint(args...))) }
func (t *mainTB) Fatalf(format string, args ...any) { panic(tbFailure(fmt.Sprintf(format, args...))) }
func (t *mainTB) Skip(args ...any)                  { panic(tbFailure("skipped: " + fmt.Sprint(args...))) }

func (t *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "redisstoretest")
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
	t.cleanups = nil
}
