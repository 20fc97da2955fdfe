package registry_test

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// calls returns how many times Redis ran cmd since the last CONFIG
// RESETSTAT (commands run by scripts included).
func calls(t *testing.T, c rueidis.Client, cmd string) int {
	t.Helper()
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func resetStats(t *testing.T, c rueidis.Client) {
	t.Helper()
	if err := c.Do(t.Context(), c.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
}

// The work of one call does not grow with what the user holds: a
// start-or-reuse that finds no candidate reads at most 256 records, a
// metadata-filtered page at most 10 × limit (counted by Redis itself).
func TestBoundedWork(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	h := start(t, srv, nil)
	c := srv.Client(t)
	for i := range 400 {
		want(t, h.Do(t, "POST", "/v1/users/alice/sessions", fmt.Sprintf(`{"session_id":"s%d","metadata":{"repo":"r"}}`, i)), 201)
	}
	resetStats(t, c)
	activeSession(t, h, "alice", `{"match":{"agent":"nobody"}}`, 201)
	if n := calls(t, c, "hmget"); n > 256+2 { // + the new session's guard and finish_write
		t.Errorf("start-or-reuse read %d records, want at most 256 candidates and its own twice", n)
	}
	resetStats(t, c)
	rep := h.Do(t, "GET", "/v1/users/alice/sessions?metadata.repo=r&status=failed&limit=5", "")
	var p page
	rep.JSON(t, &p)
	if rep.Status != 200 || len(p.Sessions) != 0 || p.NextCursor == nil {
		t.Fatalf("page: %d %s", rep.Status, rep.Body)
	}
	if n := calls(t, c, "hmget"); n > 50 {
		t.Errorf("a page of limit 5 examined %d records, want at most 50", n)
	}
}
