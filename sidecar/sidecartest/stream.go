package sidecartest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// StreamLimit bounds how long Stream reads.
const StreamLimit = 10 * time.Second

// Stream sends GET path (under the API) with header pairs and reads a
// streaming answer (Server-Sent Events) until done says the text read so
// far is enough, or the server ends it; then it hangs up. An answer that
// is not a 200 is read whole. It fails the test when done is not satisfied
// within StreamLimit.
func (h *Host) Stream(t testing.TB, path string, done func(body string) bool, header ...string) Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StreamLimit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.API+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	rep := Reply{Status: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		rep.Body, rep.Took = string(b), time.Since(start)
		return rep
	}
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if done(sb.String()) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("GET %s: the stream did not give what the test waits for within %s; read %q", path, StreamLimit, sb.String())
			}
			break // the server ended the stream
		}
	}
	rep.Body, rep.Took = sb.String(), time.Since(start)
	return rep
}
