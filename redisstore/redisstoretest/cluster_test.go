package redisstoretest_test

import (
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The rig's cluster is a real one: every master serves slots, a cluster
// client routes keys to all of them, and Flush empties it.
func TestClusterRig(t *testing.T) {
	start := time.Now()
	c := redisstoretest.NewCluster(t, 3, 0)
	t.Logf("3-master cluster up in %s", time.Since(start).Round(time.Millisecond))
	masters, err := c.Masters(t.Context())
	if err != nil || len(masters) != 3 {
		t.Fatalf("masters %v, %v", masters, err)
	}
	cl := c.Client(t)
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		if err := cl.Do(t.Context(), cl.B().Set().Key(k).Value("1").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.DBSize(t.Context()); err != nil || n != 6 {
		t.Fatalf("dbsize %d, %v", n, err)
	}
	if err := c.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.DBSize(t.Context()); n != 0 {
		t.Fatalf("dbsize after flush %d", n)
	}
}
