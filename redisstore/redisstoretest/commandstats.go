package redisstoretest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"
)

// CommandCalls is how many times Redis ran each command so far, by name
// (INFO commandstats: "hset", "config|resetstat"; a script's own commands
// count beside its FCALL or EVALSHA). Real redis-server only.
func CommandCalls(t testing.TB, c rueidis.Client) map[string]int64 {
	t.Helper()
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, stats, _ := strings.Cut(rest, ":")
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q: %v", line, err)
		}
		out[name] = n
	}
	return out
}

// Commands is what Redis ran while a function ran (CommandsOf): each
// command's count, by name, and the total.
type Commands struct {
	Calls map[string]int64
	Total int64
}

// String is the total and each command's count, by name: "9: expire×1
// fcall×1 ...".
func (c Commands) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", c.Total)
	for _, name := range slices.Sorted(maps.Keys(c.Calls)) {
		fmt.Fprintf(&b, " %s×%d", name, c.Calls[name])
	}
	return b.String()
}

// CommandsOf runs f and returns the commands Redis ran meanwhile: the
// cost of f in commands, when nothing else uses the server (the INFO that
// reads the counts is left out).
func CommandsOf(t testing.TB, c rueidis.Client, f func()) Commands {
	t.Helper()
	before := CommandCalls(t, c)
	f()
	after := CommandCalls(t, c)
	after["info"]-- // the INFO of before, counted once it ran
	out := Commands{Calls: map[string]int64{}}
	for name, n := range after {
		if d := n - before[name]; d > 0 {
			out.Calls[name] = d
			out.Total += d
		}
	}
	return out
}
