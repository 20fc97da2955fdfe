package sessions_test

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// monitor follows a real redis-server's MONITOR stream: Redis's own record
// of every command it runs, those a script runs included (source "lua",
// right after the FCALL or EVALSHA that ran them). Tests read it between markers to
// count the work each command did.
type monitor struct {
	t    *testing.T
	addr string
	r    *bufio.Reader
	n    int
}

// command is one top-level command and the commands its script ran.
type command struct {
	name  string
	args  []string // the first few arguments
	inner []command
}

func newMonitor(t *testing.T, srv *redisstoretest.Server) *monitor {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	m := &monitor{t: t, addr: srv.Addr, r: bufio.NewReaderSize(conn, 1<<20)}
	if line, err := m.r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		t.Fatalf("MONITOR: %q %v", line, err)
	}
	m.mark() // start from here
	return m
}

// mark sends a marker (ECHO on a connection of its own) and returns the
// commands Redis ran since the previous mark, the marker excluded.
func (m *monitor) mark() []command {
	m.t.Helper()
	m.n++
	marker := "sidecar-test-mark-" + strconv.Itoa(m.n)
	if _, err := redisstoretest.RawCommand(m.addr, "ECHO "+marker, 5*time.Second); err != nil {
		m.t.Fatal(err)
	}
	var out []command
	for {
		line, err := m.r.ReadString('\n')
		if err != nil {
			m.t.Fatalf("reading MONITOR: %v", err)
		}
		source, name, args := parseMonitorLine(line)
		if strings.EqualFold(name, "echo") && len(args) == 1 && args[0] == marker {
			return out
		}
		if name == "" {
			continue
		}
		c := command{name: strings.ToLower(name), args: args}
		if source == "lua" && len(out) > 0 {
			last := &out[len(out)-1]
			last.inner = append(last.inner, c)
			continue
		}
		out = append(out, c)
	}
}

// parseMonitorLine reads `<time> [<db> <source>] "cmd" "arg" ...`: the
// source ("lua" or the client's address), the command and its arguments
// (at most 1 024).
func parseMonitorLine(line string) (source, name string, args []string) {
	open, end := strings.IndexByte(line, '['), strings.IndexByte(line, ']')
	if open < 0 || end < open {
		return "", "", nil
	}
	if f := strings.Fields(line[open+1 : end]); len(f) == 2 {
		source = f[1]
	}
	rest := line[end+1:]
	var toks []string
	for len(toks) < 1025 {
		i := strings.IndexByte(rest, '"')
		if i < 0 {
			break
		}
		var b strings.Builder
		j := i + 1
		for j < len(rest) && rest[j] != '"' {
			if rest[j] == '\\' && j+1 < len(rest) {
				j++
				if rest[j] == 'x' && j+2 < len(rest) {
					v, _ := strconv.ParseUint(rest[j+1:j+3], 16, 8)
					b.WriteByte(byte(v))
					j += 3
					continue
				}
			}
			b.WriteByte(rest[j])
			j++
		}
		toks = append(toks, b.String())
		rest = rest[min(j+1, len(rest)):]
	}
	if len(toks) == 0 {
		return source, "", nil
	}
	return source, toks[0], toks[1:]
}

// work is what one top-level command made Redis read: list elements
// through LRANGE and LINDEX (its script's and its own), and whether it ran
// a command whose work grows with the key (LRANGE from a start to -1,
// HGETALL, SMEMBERS, KEYS, ...).
type work struct {
	elements  int
	unbounded string
}

func (c command) work() work {
	var w work
	for _, x := range append([]command{c}, c.inner...) {
		switch x.name {
		case "lrange":
			if len(x.args) < 3 {
				continue
			}
			start, _ := strconv.Atoi(x.args[1])
			stop, _ := strconv.Atoi(x.args[2])
			if (start >= 0) != (stop >= 0) {
				w.unbounded = fmt.Sprintf("LRANGE %s %d %d", x.args[0], start, stop)
				continue
			}
			w.elements += max(0, stop-start+1)
		case "lindex":
			w.elements++
		case "hgetall", "hkeys", "hvals", "smembers", "keys", "sort":
			w.unbounded = strings.ToUpper(x.name) + " " + strings.Join(x.args, " ")
		}
	}
	return w
}

// maxWork is the most elements one command of cmds read, the command,
// and the first unbounded command seen ("" when none).
func maxWork(cmds []command) (most int, which, unbounded string) {
	for _, c := range cmds {
		w := c.work()
		if w.unbounded != "" && unbounded == "" {
			unbounded = w.unbounded
		}
		if w.elements > most {
			most, which = w.elements, c.name
		}
	}
	return most, which, unbounded
}

// runs counts the runs of script s in cmds (FCALL of its function, or
// EVALSHA/EVAL).
func runs(cmds []command, s *lua.Script) int {
	n := 0
	for _, c := range cmds {
		if len(c.args) == 0 {
			continue
		}
		switch c.name {
		case "evalsha":
			n += btoi(c.args[0] == s.SHA1())
		case "eval":
			n += btoi(c.args[0] == s.Source())
		case "fcall", "fcall_ro":
			n += btoi(c.args[0] == s.Function())
		}
	}
	return n
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scripts counts the script calls in cmds (FCALL, or EVALSHA/EVAL).
func scripts(cmds []command) int {
	n := 0
	for _, c := range cmds {
		if c.name == "evalsha" || c.name == "eval" || c.name == "fcall" || c.name == "fcall_ro" {
			n++
		}
	}
	return n
}
