package messages_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// The children of a message are answered within the answer's byte cap
// (SIDECAR_MAX_ANSWER_BYTES, or less under the in-flight byte budget), at
// least one whatever its size, with Sidecar-Truncated when the cap left
// some out: a message with a thousand 1 MiB children is not one answer of
// a gigabyte.
func TestChildrenWithinTheAnswerCap(t *testing.T) {
	redisstoretest.Each(t, func(t *testing.T, srv *redisstoretest.Server) {
		h := start(t, srv, envconf.Env{"SIDECAR_MAX_ANSWER_BYTES": "70000"})
		post(t, h, `{"id":"root","role":"user","content":"q"}`, 201)
		big := strings.Repeat("x", 30000)
		for i := range 5 {
			post(t, h, fmt.Sprintf(`{"id":"c%d","role":"assistant","content":%q,"parent_id":"root"}`, i, big), 201)
		}
		read := func(q string) (ids []string, truncated bool) {
			t.Helper()
			rep := h.Do(t, "GET", msgs+"/root/children"+q, "")
			if rep.Status != 200 {
				t.Fatalf("children%s: %s", q, rep)
			}
			var body struct {
				Messages []struct{ ID string } `json:"messages"`
			}
			if err := json.Unmarshal([]byte(rep.Body), &body); err != nil {
				t.Fatal(err)
			}
			for _, m := range body.Messages {
				ids = append(ids, m.ID)
			}
			return ids, rep.Header.Get("Sidecar-Truncated") == "true"
		}
		if ids, cut := read(""); strings.Join(ids, ",") != "c0,c1" || !cut {
			t.Errorf("children within 70 000 bytes: %v truncated %v, want [c0 c1] truncated", ids, cut)
		}
		if ids, cut := read("?limit=2"); strings.Join(ids, ",") != "c0,c1" || cut {
			t.Errorf("two children: %v truncated %v, want [c0 c1] whole", ids, cut)
		}
		post(t, h, fmt.Sprintf(`{"id":"huge","role":"assistant","content":%q,"parent_id":"c0"}`, strings.Repeat("y", 90000)), 201)
		rep := h.Do(t, "GET", msgs+"/c0/children", "")
		if rep.Status != 200 || !strings.Contains(rep.Body, `"id":"huge"`) {
			t.Errorf("one child past the cap: %s, want it answered whole", rep)
		}
	})
}
