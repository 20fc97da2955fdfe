// Package locktest runs a real sidecar host serving the locks module on
// loopback ports, for the locks tests, benchmarks and examples (including a
// TestMain, which has no *testing.T).
package locktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Host is a running sidecar with the locks module.
type Host struct {
	API, Ops string // base URLs: http://127.0.0.1:port
	Sidecar  *sidecar.Host
	Conn     *redisstore.Conn
	cancel   context.CancelFunc
	done     chan error
}

// Start runs a host against redisURL with env (plus loopback listeners on
// free ports) and waits until Redis is connected. Stop it with Stop.
func Start(redisURL string, env envconf.Env) (*Host, error) {
	full := envconf.Env{"SIDECAR_LISTEN_ADDR": "127.0.0.1:0", "SIDECAR_OPS_ADDR": "127.0.0.1:0", "REDIS_URL": redisURL, "LOG_LEVEL": "error"}
	for k, v := range env {
		full[k] = v
	}
	cfg, err := sidecar.LoadConfig(full)
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("LOCKTEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	conn, err := redisstore.Open(cfg.Redis, logger)
	if err != nil {
		return nil, err
	}
	h, err := sidecar.NewHost(context.Background(), cfg, full, conn, logger, []sidecar.Factory{locks.Factory})
	if err != nil {
		conn.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	th := &Host{Sidecar: h, Conn: conn, cancel: cancel, done: make(chan error, 1)}
	go func() { th.done <- h.Run(ctx) }()
	api, ops := h.Addrs()
	th.API, th.Ops = "http://"+api, "http://"+ops
	select {
	case <-conn.Ready():
	case <-time.After(10 * time.Second):
		_ = th.Stop()
		return nil, fmt.Errorf("redis at %s not connected within 10s", redisURL)
	}
	return th, nil
}

// StartT is Start for a test: it fails the test on error and stops the
// host when the test ends.
func StartT(t testing.TB, redisURL string, env envconf.Env) *Host {
	t.Helper()
	h, err := Start(redisURL, env)
	if err != nil {
		t.Fatalf("start sidecar: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Errorf("stop sidecar: %v", err)
		}
	})
	return h
}

// Stop shuts the host down as SIGTERM does and closes its Redis connection.
func (h *Host) Stop() error {
	h.cancel()
	defer h.Conn.Close()
	select {
	case err := <-h.done:
		h.done <- err
		return err
	case <-time.After(15 * time.Second):
		return errors.New("host did not stop within 15s")
	}
}

// Metrics returns the ops listener's /metrics text.
func (h *Host) Metrics() (string, error) {
	resp, err := http.Get(h.Ops + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// Redis is a redis-server started without a *testing.T (for TestMain and
// examples); Stop kills it.
type Redis struct {
	URL  string
	cmd  *exec.Cmd
	dir  string
	mini *miniredis.Miniredis
}

// StartRedis starts a redis-server on a free loopback port, or, when the
// binary is missing and REQUIRE_REAL_REDIS is not set, an embedded
// miniredis.
func StartRedis() (*Redis, error) {
	if !redisstoretest.RealAvailable() {
		if redisstoretest.RequireReal() {
			return nil, errors.New("REQUIRE_REAL_REDIS=1 but redis-server is not on PATH")
		}
		m, err := redisstore.StartEmbedded()
		if err != nil {
			return nil, err
		}
		return &Redis{URL: "redis://" + m.Addr(), mini: m}, nil
	}
	dir, err := os.MkdirTemp("", "locktest-redis")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 {
		port, err := redisstoretest.FreePort()
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", "")
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if waitPing(addr, 10*time.Second) == nil {
			return &Redis{URL: "redis://" + addr, cmd: cmd, dir: dir}, nil
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		lastErr = fmt.Errorf("redis-server on %s: %s", addr, out.String())
	}
	return nil, lastErr
}

// Stop kills the server.
func (r *Redis) Stop() {
	if r.mini != nil {
		r.mini.Close()
	}
	if r.cmd != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
}

func waitPing(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(200 * time.Millisecond))
			_, _ = conn.Write([]byte("PING\r\n"))
			buf := make([]byte, 16)
			n, _ := conn.Read(buf)
			conn.Close()
			if strings.HasPrefix(string(buf[:n]), "+PONG") {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG from %s within %s", addr, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
