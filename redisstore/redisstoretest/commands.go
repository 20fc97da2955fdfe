package redisstoretest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"
)

var cmdstat = regexp.MustCompile(`cmdstat_([a-z_|]+):calls=(\d+)`)

// Commands is what one redis-server ran since the last call (or its start),
// command by command (INFO commandstats: a script's own commands count,
// each as its name), but the commands of the connections' upkeep (CLIENT,
// HELLO, PING) and CONFIG (this function ends with CONFIG RESETSTAT, which
// starts the next count; its INFO is not in its own answer): a test counts
// what a call costs Redis with Commands before and after it.
func Commands(t testing.TB, c rueidis.Client) map[string]int {
	t.Helper()
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range cmdstat.FindAllStringSubmatch(info, -1) {
		if n, _ := strconv.Atoi(m[2]); !strings.HasPrefix(m[1], "config") && !strings.HasPrefix(m[1], "client") &&
			m[1] != "hello" && m[1] != "ping" {
			out[m[1]] = n
		}
	}
	if err := c.Do(t.Context(), c.B().ConfigResetstat().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	return out
}
