package messages_test

import (
	"strconv"
	"testing"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The Idempotency-Key ring keeps the 1 000 newest keys. A key whose
// messages are all gone is stored again in a new slot: its old slot must
// not evict it early, when the keys after its old slot wrap around.
func TestIdempotencyKeyStoredAgain(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, nil)
		post(t, h, `{"role":"user","content":"a"}`, 201, "Idempotency-Key", "K")
		if rep := h.Do(t, "POST", msgs+"/pop", ""); rep.Status != 200 {
			t.Fatalf("pop: %s", rep)
		}
		again := post(t, h, `{"role":"user","content":"a"}`, 201, "Idempotency-Key", "K")
		// 999 keys more: K is still among the 1 000 newest
		for i := range 999 {
			post(t, h, `{"role":"user","content":"b"}`, 201, "Idempotency-Key", "k"+strconv.Itoa(i))
		}
		if got := post(t, h, `{"role":"user","content":"a"}`, 200, "Idempotency-Key", "K"); got.ID != again.ID {
			t.Fatalf("retry of K: got %s, want %s", got.ID, again.ID)
		}
		// one key more evicts it
		post(t, h, `{"role":"user","content":"b"}`, 201, "Idempotency-Key", "k999")
		post(t, h, `{"role":"user","content":"a"}`, 201, "Idempotency-Key", "K")
	})
}
