package redisstoretest_test

import (
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// Setup runs the rigs without a *testing.T, as a TestMain does: the server
// it starts answers until stop, and stop takes it down.
func TestSetupStartsAndStops(t *testing.T) {
	var srv *redisstoretest.Server
	stop, err := redisstoretest.Setup(func(tb testing.TB) { srv = redisstoretest.New(tb) })
	if err != nil {
		stop()
		t.Fatalf("Setup: %v", err)
	}
	c := srv.Client(t)
	if err := c.Do(t.Context(), c.B().Ping().Build()).Error(); err != nil {
		t.Fatalf("PING before stop: %v", err)
	}
	stop()
	if srv.Backend == redisstoretest.Real {
		if _, err := redisstoretest.RawCommand(srv.Addr, "PING", time.Second); err == nil {
			t.Fatalf("redis-server at %s still answers after stop", srv.Addr)
		}
	}
}

// A Fatal inside Setup ends it with that message as the error, and what was
// registered before still runs at stop, last first.
func TestSetupReturnsFatalAsError(t *testing.T) {
	var ran []string
	stop, err := redisstoretest.Setup(func(tb testing.TB) {
		tb.Cleanup(func() { ran = append(ran, "first") })
		tb.Cleanup(func() { ran = append(ran, "second") })
		tb.Fatalf("no %s today", "redis")
		ran = append(ran, "after Fatal")
	})
	if err == nil || err.Error() != "no redis today" {
		t.Fatalf("got error %v, want \"no redis today\"", err)
	}
	stop()
	if len(ran) != 2 || ran[0] != "second" || ran[1] != "first" {
		t.Fatalf("got %v, want the cleanups last first and nothing after Fatal", ran)
	}
}
