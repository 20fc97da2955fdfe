package locks_test

import (
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// A Redis user whose ACL refuses the release channel still releases: the
// wake-up is best effort (a refused PUBLISH failed the release after its
// DEL), and a waiter gets the lock by its own re-check.
func TestReleaseWithoutChannelPermission(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	if reply, err := redisstoretest.RawCommand(srv.Addr, "ACL SETUSER nochan on >pw ~* resetchannels +@all", 5*time.Second); err != nil || reply != "+OK" {
		t.Fatalf("ACL SETUSER: %q %v", reply, err)
	}
	h := sidecartest.StartURL(t, "redis://nochan:pw@"+srv.Addr, nil, locks.Factory)
	sidecartest.NewClient(t, h.Ops).WaitServing(t, "/readyz", 10*time.Second)
	g := decode[grant](t, do(t, t.Context(), "POST", h.API+"/v1/locks/job", `{"ttl_ms":60000}`))
	waited := make(chan reply, 1)
	go func() {
		waited <- do(t, t.Context(), "POST", h.API+"/v1/locks/job", `{"ttl_ms":60000,"wait_ms":10000}`)
	}()
	time.Sleep(100 * time.Millisecond) // the waiter is blocked
	if r := do(t, t.Context(), "DELETE", h.API+"/v1/locks/job", tokenBody(g.Token)); r.status != 200 {
		t.Fatalf("release without channel permission: %d %s", r.status, r.body)
	}
	if r := <-waited; r.status != 200 {
		t.Fatalf("waiter after the release: %d %s, want the lock", r.status, r.body)
	}
}
