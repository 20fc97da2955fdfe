package rig

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Rig is a redis-server and a sidecar on loopback.
type Rig struct {
	RedisPort int
	API       string // the sidecar's base URL
	Redis     *exec.Cmd
	sidecar   *exec.Cmd
	tmp       string
}

// Start starts a redis-server without persistence and the sidecar binary
// bin over it ("": ./cmd/sidecar built first; run from the repository's
// root), with env (NAME=value) added to the sidecar's environment; it
// waits for both.
func Start(bin string, env ...string) (_ *Rig, err error) {
	r := &Rig{}
	if r.tmp, err = os.MkdirTemp("", "benchrig"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.Stop()
		}
	}()
	if bin == "" {
		bin = filepath.Join(r.tmp, "sidecar")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/sidecar").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build: %v: %s", err, out)
		}
	}
	r.RedisPort = FreePort()
	aport, oport := FreePort(), FreePort()
	r.Redis = exec.Command("redis-server", "--port", strconv.Itoa(r.RedisPort), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", r.tmp)
	if err := r.Redis.Start(); err != nil {
		return nil, err
	}
	if err := waitTCP(r.RedisPort); err != nil {
		return nil, err
	}
	r.sidecar = exec.Command(bin)
	r.sidecar.Env = append(os.Environ(), "REDIS_URL=redis://127.0.0.1:"+strconv.Itoa(r.RedisPort)+"/0", "LOG_LEVEL=warn",
		"SIDECAR_LISTEN_ADDR=127.0.0.1:"+strconv.Itoa(aport), "SIDECAR_OPS_ADDR=127.0.0.1:"+strconv.Itoa(oport))
	r.sidecar.Env = append(r.sidecar.Env, env...)
	r.sidecar.Stderr = os.Stderr
	if err := r.sidecar.Start(); err != nil {
		return nil, err
	}
	if err := waitReady(oport); err != nil {
		return nil, err
	}
	r.API = "http://127.0.0.1:" + strconv.Itoa(aport)
	return r, nil
}

// Stop stops the sidecar, then Redis, and removes their folder.
func (r *Rig) Stop() {
	for _, c := range []*exec.Cmd{r.sidecar, r.Redis} {
		if c != nil && c.Process != nil {
			stop(c)
		}
	}
	os.RemoveAll(r.tmp)
}

// RedisVersion is redis-server's version.
func RedisVersion() string {
	out, _ := exec.Command("redis-server", "--version").Output()
	if f := strings.Fields(string(out)); len(f) > 2 {
		return strings.TrimPrefix(f[2], "v=")
	}
	return "?"
}

// Conn is a plain RESP connection: one command, one round trip.
type Conn struct {
	c  net.Conn
	rd *bufio.Reader
}

// Dial connects to the Redis on port.
func Dial(port int) (*Conn, error) {
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, rd: bufio.NewReader(c)}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends one command and reads its reply: a string, an int64, nil or a
// []any of those; a Redis error as an error.
func (c *Conn) Do(args ...string) (any, error) {
	if _, err := c.c.Write(RESP(args)); err != nil {
		return nil, err
	}
	return c.parse()
}

func (c *Conn) parse() (any, error) {
	line, err := c.rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	switch line[0] {
	case '-':
		return nil, errors.New(line[1:])
	case '+':
		return line[1:], nil
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.rd, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.parse(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// RESP is args as a RESP command.
func RESP(args []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// FreePort is a free loopback port.
func FreePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitTCP(port int) error {
	for range 100 {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on %d", port)
}

func waitReady(port int) error {
	for range 200 {
		if r, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the sidecar is not ready")
}

func stop(c *exec.Cmd) {
	_ = c.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.Process.Kill()
	}
}
