package adk_test

import (
	"os"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// TestMain shares one Redis Cluster among the package's cluster subtests
// (flushed before each) and stops it at the end.
func TestMain(m *testing.M) { os.Exit(redisstoretest.Main(m)) }
