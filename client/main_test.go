package client_test

import (
	"fmt"
	"github.com/agentsidecar/agentsidecar/envconf"
	"os"
	"testing"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"

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
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	stop, err := redisstoretest.Setup(func(tb testing.TB) {
		redisSrv = redisstoretest.New(tb)
		// the events tests read what every write recorded
		sidecarURL = sidecartest.Start(tb, redisSrv, envconf.Env{"SESSION_EVENTS": "always"}, modules.All()...).API
	})
	defer stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start sidecar:", err)
		return 1
	}
	return m.Run()
}
