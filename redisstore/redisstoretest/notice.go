package redisstoretest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// A passing package prints only "ok" under `go test ./...`, so a test that
// skips for want of redis-server would go unnoticed. Every skip of the rig
// is recorded, and the package gets one notice line naming the skipped tests
// and why: at the end of the run when its TestMain calls Main, else at its
// first skip. The line goes to the go command's own stderr (noticeWriter),
// so `go test ./...` shows it beside the package's "ok" line, unless the
// run is verbose, where stderr is shown anyway.

// maxNamed is how many skipped tests the notice names before "and N more".
const maxNamed = 6

var skips struct {
	mu      sync.Mutex
	reasons []string            // in order of first appearance
	tests   map[string][]string // reason → skipped test names
	printed bool
	rig     bool // a skip of the rig's own, which REQUIRE_REAL_REDIS=1 turns into a failure
}

// Skip skips t for reason (a missing tool, say: "node not on PATH") and
// records it in the package's one notice line, as the rig does for
// redis-server. The reason should say how to get the tool, and what makes
// the test fail instead of skipping.
func Skip(t testing.TB, reason string) {
	t.Helper()
	record(t, reason, false)
}

// skip records t's skip for reason, prints the notice when no Main will,
// and skips t.
func skip(t testing.TB, reason string) {
	t.Helper()
	record(t, reason, true)
}

func record(t testing.TB, reason string, rig bool) {
	t.Helper()
	shared.mu.Lock()
	viaMain := shared.main
	shared.mu.Unlock()
	skips.mu.Lock()
	if skips.tests == nil {
		skips.tests = map[string][]string{}
	}
	if _, ok := skips.tests[reason]; !ok {
		skips.reasons = append(skips.reasons, reason)
	}
	skips.tests[reason] = append(skips.tests[reason], t.Name())
	skips.rig = skips.rig || rig
	if !viaMain && !skips.printed {
		skips.printed = true
		writeNotice(fmt.Sprintf("%s: tests skip: %s (the first: %s); `go test -v` lists them%s",
			packageName(), reason, t.Name(), failInstead(rig)))
	}
	skips.mu.Unlock()
	t.Skip(reason)
}

// printSkipNotice prints the package's one notice line, if anything skipped.
func printSkipNotice() {
	skips.mu.Lock()
	defer skips.mu.Unlock()
	if skips.printed || len(skips.reasons) == 0 {
		return
	}
	skips.printed = true
	n := 0
	parts := make([]string, 0, len(skips.reasons))
	for _, reason := range skips.reasons {
		names := skips.tests[reason]
		n += len(names)
		listed := strings.Join(names[:min(len(names), maxNamed)], ", ")
		if more := len(names) - maxNamed; more > 0 {
			listed += fmt.Sprintf(" and %d more", more)
		}
		parts = append(parts, fmt.Sprintf("%s: %s", reason, listed))
	}
	plural := "s"
	if n == 1 {
		plural = ""
	}
	writeNotice(fmt.Sprintf("%s: %d test%s skipped (%s); `go test -v` lists them%s",
		packageName(), n, plural, strings.Join(parts, "; "), failInstead(skips.rig)))
}

// failInstead is the notice's last words for the rig's own skips.
func failInstead(rig bool) string {
	if rig {
		return "; REQUIRE_REAL_REDIS=1 makes them fail instead"
	}
	return ""
}

func writeNotice(line string) {
	w, done := noticeWriter()
	defer done()
	fmt.Fprintln(w, line)
}

// noticeWriter is where the notice line is seen: stderr under -v (shown
// anyway); else the go command's own stderr when it runs this binary, as
// `go test ./...` drops a passing package's output (a terminal, a pipe, or
// a file opened for appending: a file go writes at its own offset would
// lose the line); else the terminal; else stderr.
func noticeWriter() (io.Writer, func()) {
	if !testing.Verbose() {
		if f := goStderr(); f != nil {
			return f, func() { _ = f.Close() }
		}
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			return tty, func() { _ = tty.Close() }
		}
	}
	return os.Stderr, func() {}
}

// goStderr opens the stderr of this process's parent when the parent is
// the go command (Linux's /proc), or returns nil.
func goStderr() *os.File {
	parent := fmt.Sprintf("/proc/%d/", os.Getppid())
	comm, err := os.ReadFile(parent + "comm")
	if err != nil || strings.TrimSpace(string(comm)) != "go" {
		return nil
	}
	fi, err := os.Stat(parent + "fd/2")
	if err != nil {
		return nil
	}
	if fi.Mode().IsRegular() {
		info, err := os.ReadFile(parent + "fdinfo/2")
		flags := ""
		for _, l := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(l, "flags:"); ok {
				flags = strings.TrimSpace(v)
			}
		}
		n, perr := strconv.ParseInt(flags, 8, 64)
		if err != nil || perr != nil || n&syscall.O_APPEND == 0 {
			return nil
		}
	} else if fi.Mode()&(os.ModeCharDevice|os.ModeNamedPipe) == 0 {
		return nil
	}
	f, err := os.OpenFile(parent+"fd/2", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil
	}
	return f
}

// packageName is the test binary's package, from its name (sessions.test).
func packageName() string {
	return strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
}
