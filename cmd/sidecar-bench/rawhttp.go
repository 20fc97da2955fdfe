package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// rawClient is a minimal HTTP/1.1 keep-alive client, one connection per
// worker, as wrk is: it writes the request in one syscall and parses the
// answer in place. net/http's client costs ~35 µs of CPU per request and
// two goroutine hand-offs (persistConn's read and write loops); on two
// shared cores that is CPU taken from the sidecar and latency charged to
// it. -http-client std switches back to net/http.
type rawClient struct {
	addr  string // host:port
	host  string // Host header
	token string
	conns []*rawConn // by worker id
}

type rawConn struct {
	c    net.Conn
	br   *bufio.Reader
	wbuf []byte
	body []byte
}

// requestTimeout bounds one request on a raw connection.
const requestTimeout = 30 * time.Second

func newRawClient(base, token string, conns int) (*rawClient, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("-sidecar %q: the raw client speaks plain http://host:port only (or use -http-client std)", base)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &rawClient{addr: addr, host: u.Host, token: token, conns: make([]*rawConn, conns)}, nil
}

// do sends one request on worker id's connection and returns the status
// and body (valid until that worker's next request).
func (r *rawClient) do(ctx context.Context, id int, method, path string, body []byte) (int, []byte, error) {
	rc := r.conns[id]
	if rc == nil {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", r.addr)
		if err != nil {
			return 0, nil, err
		}
		rc = &rawConn{c: c, br: bufio.NewReaderSize(c, 64<<10), wbuf: make([]byte, 0, 1024)}
		r.conns[id] = rc
	}
	status, out, keep, err := rc.roundTrip(r, method, path, body)
	if err != nil || !keep {
		rc.c.Close()
		r.conns[id] = nil
	}
	return status, out, err
}

func (r *rawClient) close() {
	for i, rc := range r.conns {
		if rc != nil {
			rc.c.Close()
			r.conns[i] = nil
		}
	}
}

func (rc *rawConn) roundTrip(r *rawClient, method, path string, body []byte) (status int, out []byte, keep bool, err error) {
	b := rc.wbuf[:0]
	b = append(append(append(append(b, method...), ' '), path...), " HTTP/1.1\r\nHost: "...)
	b = append(append(b, r.host...), "\r\n"...)
	if r.token != "" {
		b = append(append(append(b, "Authorization: Bearer "...), r.token...), "\r\n"...)
	}
	if body != nil {
		b = append(b, "Content-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(append(b, "\r\n\r\n"...), body...)
	} else {
		b = append(b, "\r\n"...)
	}
	rc.wbuf = b
	if err := rc.c.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return 0, nil, false, err
	}
	if _, err := rc.c.Write(b); err != nil {
		return 0, nil, false, err
	}
	return rc.readResponse(method)
}

var (
	errBadResponse = errors.New("malformed HTTP response")
	hdrLength      = []byte("content-length:")
	hdrEncoding    = []byte("transfer-encoding:")
	hdrConnection  = []byte("connection:")
)

// readResponse parses a status line, headers and a Content-Length or
// chunked body.
func (rc *rawConn) readResponse(method string) (status int, body []byte, keep bool, err error) {
	line, err := rc.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, false, fmt.Errorf("%w: status line %q", errBadResponse, line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, false, fmt.Errorf("%w: status line %q", errBadResponse, line)
	}
	length, chunked := int64(-1), false
	keep = true
	for {
		line, err = rc.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, nil, false, fmt.Errorf("%w: header %q", errBadResponse, line)
		}
		val = bytes.TrimSpace(val)
		switch n := len(name) + 1; {
		case n == len(hdrLength) && bytes.EqualFold(line[:n], hdrLength):
			if length, err = strconv.ParseInt(string(val), 10, 64); err != nil || length < 0 {
				return 0, nil, false, fmt.Errorf("%w: Content-Length %q", errBadResponse, val)
			}
		case n == len(hdrEncoding) && bytes.EqualFold(line[:n], hdrEncoding):
			chunked = bytes.EqualFold(val, []byte("chunked"))
		case n == len(hdrConnection) && bytes.EqualFold(line[:n], hdrConnection):
			keep = !bytes.EqualFold(val, []byte("close"))
		}
	}
	body = rc.body[:0]
	switch {
	case method == "HEAD" || status == 204 || status == 304 || status < 200:
	case chunked:
		body, err = rc.readChunked(body)
	case length >= 0:
		if length > 64<<20 {
			return 0, nil, false, fmt.Errorf("%w: %d-byte body", errBadResponse, length)
		}
		body = grow(body, int(length))
		_, err = io.ReadFull(rc.br, body)
	default: // body until the server closes
		body, err = io.ReadAll(rc.br)
		keep = false
	}
	if err != nil {
		return 0, nil, false, err
	}
	rc.body = body
	return status, body, keep, nil
}

func (rc *rawConn) readChunked(body []byte) ([]byte, error) {
	for {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		sizeText, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeText)), 16, 64)
		if err != nil || size < 0 || size > 64<<20 || len(body)+int(size) > 64<<20 {
			return nil, fmt.Errorf("%w: chunk size %q", errBadResponse, line)
		}
		if size == 0 { // trailers, then the blank line
			for {
				line, err := rc.br.ReadSlice('\n')
				if err != nil {
					return nil, err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return body, nil
				}
			}
		}
		n := len(body)
		body = grow(body, n+int(size))
		if _, err := io.ReadFull(rc.br, body[n:]); err != nil {
			return nil, err
		}
		if _, err := rc.br.Discard(2); err != nil { // CRLF after the chunk
			return nil, err
		}
	}
}

// grow returns b resized to n bytes, keeping its contents.
func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}
