package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsidecar/agentsidecar/redisstore/redisstoretest"
)

// A sidecar killed (SIGKILL) in the middle of a staged 8 MiB append leaves
// the history as it was before, every key of the session with a TTL (the
// staged messages in the session's own keys); the same append retried
// with its Idempotency-Key on another sidecar waits out the dead stage's
// lease, drops its messages and lands whole, nothing of the first attempt
// left behind.
func TestKilledMidStageLeavesTheHistoryWhole(t *testing.T) {
	srv := redisstoretest.NewReal(t)
	c := srv.Client(t)
	p1 := start(t, "REDIS_URL="+srv.URL())
	waitStatus(t, "http://"+p1.ops+"/readyz", 200, 15*time.Second)
	url := "/v1/users/alice/sessions/killed/messages"
	if r, err := post("http://"+p1.api+url, []byte(`{"id":"before","role":"user","content":"the turn before"}`)); err != nil || r.status != 201 {
		t.Fatalf("the first message: %+v %v", r, err)
	}
	body := appendBody("k", 32, 256<<10-200)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+p1.api+url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "turn-2")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	// kill it once some of the append is staged
	record := srv.Layout().Session("alice", "killed").Record
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		st, _ := c.Do(context.Background(), c.B().Hget().Key(record).Field("msg_stage").Build()).ToString()
		if f := strings.Split(st, "\t"); len(f) > 3 && f[3] != "0" {
			t.Logf("killed with %s messages staged", f[3])
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the append was never seen staging")
		}
	}
	if err := p1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p1.exited

	p2 := start(t, "REDIS_URL="+srv.URL())
	waitStatus(t, "http://"+p2.ops+"/readyz", 200, 15*time.Second)
	if n := total(t, "http://"+p2.api+url); n != 1 {
		t.Fatalf("after the kill the path holds %d messages, want the 1 before", n)
	}
	keys, err := c.Do(context.Background(), c.B().Keys().Pattern("*alice:killed*").Build()).AsStrSlice()
	if err != nil || len(keys) < 5 {
		t.Fatalf("the session's keys: %v %v", keys, err)
	}
	for _, k := range keys {
		if ttl, _ := c.Do(context.Background(), c.B().Pttl().Key(k).Build()).AsInt64(); ttl <= 0 {
			t.Errorf("%s: PTTL %d after the kill, want a TTL", k, ttl)
		}
	}

	req, _ := http.NewRequest("POST", "http://"+p2.api+url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "turn-2")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("the retry: %d, want 201", resp.StatusCode)
	}
	if n := total(t, "http://"+p2.api+url); n != 33 {
		t.Fatalf("after the retry the path holds %d messages, want 33", n)
	}
	msgs := strings.Replace(record, "agent_session_record", "agent_session_msgs", 1)
	if n, _ := c.Do(context.Background(), c.B().Hlen().Key(msgs).Build()).AsInt64(); n != 33 {
		t.Errorf("%s holds %d messages, want 33: the dead stage's are left", msgs, n)
	}
}

// total is the message count of the path at url.
func total(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url + "?limit=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	i := strings.Index(b.String(), `"total":`)
	if resp.StatusCode != 200 || i < 0 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b.String())
	}
	rest := b.String()[i+len(`"total":`):]
	n, err := strconv.Atoi(rest[:strings.IndexAny(rest, ",}")])
	if err != nil {
		t.Fatal(fmt.Errorf("total in %s: %w", b.String(), err))
	}
	return n
}
