package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process the tool started; stop ends it (SIGTERM, then
// SIGKILL after 5 s). Children also get SIGKILL if the tool dies.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *bytes.Buffer
}

func start(name string, cmd *exec.Cmd) (*proc, error) {
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{}), log: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// lastLog is the tail of the process's output, for error messages.
func (p *proc) lastLog() string {
	s := strings.TrimSpace(p.log.String())
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startRedis runs a private redis-server (no persistence) on a free
// loopback port and waits until it answers PING.
func startRedis(ctx context.Context, bin, dir string) (*proc, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	p, err := start("redis-server", exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no"))
	if err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pingRedis(addr) == nil {
			return p, addr, nil
		}
		select {
		case <-p.exited:
			return nil, "", fmt.Errorf("redis-server exited: %s", p.lastLog())
		case <-ctx.Done():
			p.stop()
			return nil, "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, "", fmt.Errorf("redis-server on %s not answering after 10s: %s", addr, p.lastLog())
		}
	}
}

func pingRedis(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING: %q", line)
	}
	return nil
}

// buildSidecar builds ./cmd/sidecar of this module into dir.
func buildSidecar(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "sidecar")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/agentsidecar/agentsidecar/cmd/sidecar")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/sidecar (run from the module, or give -sidecar-bin): %w: %s", err, bytes.TrimSpace(msg))
	}
	return out, nil
}

// sidecarProc is a spawned sidecar.
type sidecarProc struct {
	*proc
	api, ops string        // base URLs
	ready    time.Duration // exec to the first /readyz 200
}

// startSidecar execs bin against redisAddr on free loopback ports and waits
// for /readyz 200, timing exec → ready. The environment is only what the
// sidecar needs plus -sidecar-env (not the tool's own environment).
func startSidecar(ctx context.Context, bin, redisAddr string, cfg *config) (*sidecarProc, error) {
	apiPort, err := freePort()
	if err != nil {
		return nil, err
	}
	opsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"REDIS_URL=redis://" + redisAddr + "/0",
		"SIDECAR_LISTEN_ADDR=127.0.0.1:" + strconv.Itoa(apiPort),
		"SIDECAR_OPS_ADDR=127.0.0.1:" + strconv.Itoa(opsPort),
		"LOG_LEVEL=warn",
		"SESSION_TTL_SECONDS=" + strconv.Itoa(cfg.sessionTTL),
		"SESSION_MAX_ENTRIES=" + strconv.Itoa(cfg.maxEntries),
	}
	cmd.Env = append(cmd.Env, cfg.sidecarEnv...)
	s := &sidecarProc{
		api: "http://127.0.0.1:" + strconv.Itoa(apiPort),
		ops: "http://127.0.0.1:" + strconv.Itoa(opsPort),
	}
	t0 := time.Now()
	s.proc, err = start("sidecar", cmd)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, s.ops, s.proc.exited, 10*time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("sidecar: %w: %s", err, s.lastLog())
	}
	s.ready = time.Since(t0)
	return s, nil
}

// waitReady polls ops/readyz every millisecond until it answers 200.
func waitReady(ctx context.Context, ops string, exited <-chan struct{}, limit time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(limit)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ops+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("exited before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/readyz not 200 after %v", ops, limit)
		}
	}
}

// memory reads VmRSS and VmHWM (bytes) from /proc/<pid>/status.
func memory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %q", name, val)
		}
		if name == "VmRSS" {
			rss = kb * 1024
		} else {
			hwm = kb * 1024
		}
	}
	return rss, hwm, nil
}

// cpuTime is the user+system CPU time of pid so far (/proc/<pid>/stat).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count after ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	// USER_HZ is 100 on every Linux the tool targets.
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// machine describes the host in one line.
func machine() string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if name, val, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
				model = strings.TrimSpace(val)
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s)", numCPU(), model)
}
