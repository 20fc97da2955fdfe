package sessions_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// model is what the acknowledged operations on one session imply.
type model struct {
	mu      sync.Mutex
	entries map[string]*int // live qa_id -> last acknowledged feedback score
	memify  map[string]bool // keys merged into the shared entry's memify_metadata
	traces  int
}

// Many goroutines mix every kind of write on a few sessions at once; the
// final state in Redis must be exactly what the acknowledged writes imply.
// Cognee's read-modify-write adapter loses feedback, memify keys and
// appends under this load; one script per write loses nothing.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	redisstoretest.EachWithCluster(t, func(t *testing.T, srv *redisstoretest.Server) {
		const (
			sessionsN  = 3
			goroutines = 16
			opsEach    = 40
		)
		h := start(t, srv, envconf.Env{"SESSION_TTL_SECONDS": "3600"})
		c := srv.Client(t)
		models := make([]*model, sessionsN)
		for s := range sessionsN {
			models[s] = &model{entries: map[string]*int{}, memify: map[string]bool{}}
			r := h.Do(t, "POST", sessPath(s)+"/entries", `{"question":"shared","answer":"a","qa_id":"shared"}`)
			if r.Status != 201 {
				t.Fatalf("seed: %d %s", r.Status, r.Body)
			}
			models[s].entries["shared"] = nil
		}

		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 7))
				own := make([][]string, sessionsN) // this goroutine's live entries per session
				for i := range opsEach {
					s := rng.IntN(sessionsN)
					m, p := models[s], sessPath(s)
					switch op := rng.IntN(6); {
					case op == 0 || len(own[s]) == 0:
						id := fmt.Sprintf("g%d-%d", g, i)
						if r := h.Do(t, "POST", p+"/entries", fmt.Sprintf(`{"question":"q %s","answer":"a","qa_id":%q}`, id, id)); r.Status != 201 {
							t.Errorf("append %s: %d %s", id, r.Status, r.Body)
							return
						}
						m.mu.Lock()
						m.entries[id] = nil
						m.mu.Unlock()
						own[s] = append(own[s], id)
					case op == 1:
						id := own[s][rng.IntN(len(own[s]))]
						score := 1 + rng.IntN(5)
						if r := h.Do(t, "PUT", p+"/entries/"+id+"/feedback", fmt.Sprintf(`{"feedback_score":%d}`, score)); r.Status != 200 {
							t.Errorf("feedback %s: %d %s", id, r.Status, r.Body)
							return
						}
						m.mu.Lock()
						m.entries[id] = &score
						m.mu.Unlock()
					case op == 2:
						key := fmt.Sprintf("g%d_%d", g, i)
						if r := h.Do(t, "PATCH", p+"/entries/shared", fmt.Sprintf(`{"memify_metadata":{%q:true}}`, key)); r.Status != 200 {
							t.Errorf("memify: %d %s", r.Status, r.Body)
							return
						}
						m.mu.Lock()
						m.memify[key] = true
						m.mu.Unlock()
					case op == 3:
						j := rng.IntN(len(own[s]))
						id := own[s][j]
						if r := h.Do(t, "DELETE", p+"/entries/"+id, ""); r.Status != 204 {
							t.Errorf("delete %s: %d %s", id, r.Status, r.Body)
							return
						}
						m.mu.Lock()
						delete(m.entries, id)
						m.mu.Unlock()
						own[s] = append(own[s][:j], own[s][j+1:]...)
					case op == 4:
						if r := h.Do(t, "POST", p+"/traces", `{"origin_function":"f","status":"ok"}`); r.Status != 201 {
							t.Errorf("trace: %d %s", r.Status, r.Body)
							return
						}
						m.mu.Lock()
						m.traces++
						m.mu.Unlock()
					default: // a retried append of an entry this goroutine holds
						id := own[s][rng.IntN(len(own[s]))]
						if r := h.Do(t, "POST", p+"/entries", fmt.Sprintf(`{"question":"retry","answer":"a","qa_id":%q}`, id)); r.Status != 200 {
							t.Errorf("retry %s: %d %s", id, r.Status, r.Body)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}

		for s, m := range models {
			k := srv.Layout().Session("u1", fmt.Sprintf("s%d", s))
			stored := lrange(t, c, k.Entries)
			got := map[string]entry{}
			for _, raw := range stored {
				var e entry
				if err := json.Unmarshal([]byte(raw), &e); err != nil {
					t.Fatalf("stored entry is not JSON: %v", err)
				}
				if _, dup := got[e.QAID]; dup {
					t.Fatalf("session %d: qa_id %s stored twice", s, e.QAID)
				}
				got[e.QAID] = e
			}
			if len(got) != len(m.entries) {
				t.Errorf("session %d: %d entries stored, %d acknowledged", s, len(got), len(m.entries))
			}
			for id, score := range m.entries {
				e, ok := got[id]
				switch {
				case !ok:
					t.Errorf("session %d: acknowledged entry %s lost", s, id)
				case score == nil && e.FeedbackScore != nil, score != nil && (e.FeedbackScore == nil || *e.FeedbackScore != *score):
					t.Errorf("session %d: entry %s feedback %v, last acknowledged %v", s, id, e.FeedbackScore, score)
				case strings.Contains(e.Question, "retry"):
					t.Errorf("session %d: a retried append overwrote %s", s, id)
				}
			}
			for key := range m.memify {
				if got["shared"].MemifyMetadata[key] != true {
					t.Errorf("session %d: memify key %s lost", s, key)
				}
			}
			if n := len(got["shared"].MemifyMetadata); n != len(m.memify) && len(m.memify) > 0 {
				t.Errorf("session %d: %d memify keys, %d acknowledged", s, n, len(m.memify))
			}
			if n := len(lrange(t, c, k.Traces)); n != m.traces {
				t.Errorf("session %d: %d traces stored, %d acknowledged", s, n, m.traces)
			}
			// Every acknowledged entry is reachable through the index.
			for id := range m.entries {
				if r := h.Do(t, "GET", sessPath(s)+"/entries/"+id, ""); r.Status != 200 {
					t.Errorf("session %d: GET %s: %d", s, id, r.Status)
				}
			}
			for _, key := range ownKeys(k) {
				if ttl := ttlOf(t, c, key); key != k.Context && (ttl <= 0 || ttl > 3600) {
					t.Errorf("session %d: %s has TTL %d", s, key, ttl)
				}
			}
		}
	})
}

func sessPath(s int) string { return fmt.Sprintf("/v1/users/u1/sessions/s%d", s) }
