package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/cmd/sidecar/modules"
	"github.com/agentsidecar/agentsidecar/openapi/openapitest"
	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
	"github.com/agentsidecar/agentsidecar/sidecar/sidecartest"
)

// prismDir holds Stoplight Prism, pinned by its package-lock.json
// (npm ci --prefix openapi/prism; .ci/run installs it).
var prismDir = filepath.Join("..", "..", "openapi", "prism")

// TestOpenAPIPrism runs TestOpenAPIExamples' drive (every operation, then
// the documented errors of each: bad ids, unknown parameters, non-JSON
// bodies, unknown fields, and 409s of keys another program wrote) through
// Stoplight Prism's validating proxy,
// which reads the document the sidecar serves at /openapi.json and checks
// every answer against it: a third party's reading of the document, not
// only our own validator's. Any response violation fails the test.
func TestOpenAPIPrism(t *testing.T) {
	bin := filepath.Join(prismDir, "node_modules", ".bin", "prism")
	_, err := os.Stat(bin)
	if _, nerr := exec.LookPath("node"); err != nil || nerr != nil {
		reason := "Stoplight Prism not installed (node, and npm ci --prefix openapi/prism)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s", reason)
		}
		redisstoretest.Skip(t, reason+"; CI=true makes it fail instead")
	}
	d := openapiDoc(t)
	srv := redisstoretest.New(t)
	h := sidecartest.Start(t, srv, nil, modules.All()...)
	port := freePort(t)
	var log bytes.Buffer
	prism := exec.CommandContext(t.Context(), bin, "proxy", h.Ops+"/openapi.json", h.API,
		"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--errors", "false")
	prism.Stdout, prism.Stderr = &log, &log
	if err := prism.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = prism.Process.Kill()
		_ = prism.Wait()
		if t.Failed() {
			t.Logf("prism's log:\n%s", log.String())
		}
	})
	proxy := &sidecartest.Host{API: "http://127.0.0.1:" + strconv.Itoa(port)}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(proxy.API + "/v1/sessions/stats")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prism did not listen within 60 s: %v\n%s", err, log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	checked := 0
	verdict := func(o openapitest.Operation, rep sidecartest.Reply) {
		t.Helper()
		checked++
		raw := rep.Header.Get("Sl-Violations")
		if raw == "" {
			return
		}
		var violations []struct {
			Location []string `json:"location"`
			Message  string   `json:"message"`
			Code     any      `json:"code"`
			Severity string   `json:"severity"`
		}
		if err := json.Unmarshal([]byte(raw), &violations); err != nil {
			t.Errorf("%s: sl-violations %q: %v", o.ID, raw, err)
			return
		}
		for _, v := range violations {
			// the error cases send requests the document refuses on
			// purpose; only the answers must match it
			if len(v.Location) > 0 && v.Location[0] == "request" {
				continue
			}
			t.Errorf("%s %d: prism: %s at %s (%v)", o.ID, rep.Status, v.Message, strings.Join(v.Location, "."), v.Code)
		}
	}
	driveExamples(t, d, proxy, h, verdict)
	driveConflicts(t, d, srv, proxy, verdict)
	t.Logf("%d answers checked by prism", checked)
}

// freePort is a loopback TCP port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
