package redisstoretest

import (
	"os"
	"sync"
	"testing"
)

// The package's shared cluster: started by the first test that asks for one
// in a package whose TestMain calls Main, flushed before every later test,
// stopped when Main returns. Starting a cluster takes a few seconds; a
// shared one keeps a package's cluster subtests to the cost of the tests.
var shared struct {
	mu    sync.Mutex
	main  bool
	c     *Cluster
	dir   string
	err   error
	tried bool
}

// Main runs the package's tests (from TestMain: os.Exit(Main(m))), prints
// one notice line naming the tests that skipped for want of redis-server, and
// stops the shared cluster if a test started it.
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	printSkipNotice()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c != nil {
		shared.c.Close()
		shared.c = nil
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	return code
}

// NewClusterServer gives t a clean 3-master cluster: the package's shared one
// (flushed) when its TestMain calls Main, else one of its own.
func NewClusterServer(t testing.TB) *Server {
	t.Helper()
	requireCluster(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		return NewCluster(t, 3, 0).Server(t)
	}
	if !shared.tried {
		shared.tried = true
		shared.dir, shared.err = os.MkdirTemp("", "redisstoretest-cluster-")
		if shared.err == nil {
			shared.c, shared.err = StartCluster(shared.dir, 3, 0)
		}
	}
	if shared.err != nil {
		t.Fatalf("start shared redis cluster: %v", shared.err)
	}
	if err := shared.c.Flush(t.Context()); err != nil {
		t.Fatalf("flush shared redis cluster: %v", err)
	}
	return shared.c.Server(t)
}

// EachWithCluster is Each plus a third subtest on a 3-master Redis Cluster
// (NewClusterServer), for the suites that must hold on every backend the
// sidecar supports.
func EachWithCluster(t *testing.T, f func(t *testing.T, s *Server)) {
	t.Helper()
	Each(t, f)
	t.Run(ClusterBackend, func(t *testing.T) { f(t, NewClusterServer(t)) })
}
