package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// httpTarget is the sidecar over HTTP/1.1 keep-alive: the raw client by
// default, net/http's when client is set.
type httpTarget struct {
	base   string
	token  string
	client *http.Client
	raw    *rawClient
	seeds  int
	lastN  string
}

// newHTTPTarget builds the sidecar's target with the -http-client chosen.
func newHTTPTarget(base, token, client string, conns, seeds, lastN int) (*httpTarget, error) {
	t := &httpTarget{base: base, token: token, seeds: seeds, lastN: strconv.Itoa(lastN)}
	if client == "std" {
		t.client = newHTTPClient(conns)
		return t, nil
	}
	raw, err := newRawClient(base, token, conns)
	t.raw = raw
	return t, err
}

func (t *httpTarget) close() {
	if t.raw != nil {
		t.raw.close()
	}
	if t.client != nil {
		t.client.CloseIdleConnections()
	}
}

func newHTTPClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        conns * 2,
			MaxIdleConnsPerHost: conns * 2,
			MaxConnsPerHost:     conns,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
}

var (
	appendBodyPrefix = []byte(`{"question":` + jsonString(question) + `,"answer":` + jsonString(answer) + `,"qa_id":"`)
	feedbackBody     = []byte(`{"feedback_text":` + jsonString(feedbackText) + `,"feedback_score":4}`)
	usageBody        = []byte(`{"model":"` + usageModel + `","tokens_in":1200,"tokens_out":350}`)
	acquireBody      = []byte(`{"owner":"sidecar-bench","ttl_ms":` + strconv.Itoa(lockTTLms) + `}`)
)

func (t *httpTarget) do(ctx context.Context, w *worker, k kind) error {
	switch k {
	case opAppend:
		body := append(append(append(make([]byte, 0, len(appendBodyPrefix)+16), appendBodyPrefix...), qaID(w)...), `"}`...)
		_, err := t.call(ctx, w, http.MethodPost, w.entries, body, http.StatusCreated)
		return err
	case opRead:
		_, err := t.call(ctx, w, http.MethodGet, w.entries+"?last_n="+t.lastN, nil, http.StatusOK)
		return err
	case opFeedback:
		_, err := t.call(ctx, w, http.MethodPut, w.feedbackBase+feedbackTarget(w, t.seeds)+"/feedback", feedbackBody, http.StatusOK)
		return err
	case opUsage:
		_, err := t.call(ctx, w, http.MethodPost, w.usage, usageBody, http.StatusCreated)
		return err
	case opLockAcquire:
		body, err := t.call(ctx, w, http.MethodPost, w.lock, acquireBody, http.StatusOK)
		if err != nil {
			return err
		}
		var g struct {
			Token string `json:"token"`
		}
		if err := json.Unmarshal(body, &g); err != nil || g.Token == "" {
			return fmt.Errorf("lock acquire: no token in %q", body)
		}
		w.lockToken = g.Token
		return nil
	case opLockRelease:
		body := []byte(`{"token":"` + w.lockToken + `"}`)
		w.lockToken = ""
		_, err := t.call(ctx, w, http.MethodDelete, w.lock, body, http.StatusOK)
		return err
	}
	return fmt.Errorf("unknown operation %d", k)
}

// call sends one request and reads the whole answer; a status other than
// want is an error.
func (t *httpTarget) call(ctx context.Context, w *worker, method, path string, body []byte, want int) ([]byte, error) {
	if t.raw != nil {
		status, out, err := t.raw.do(ctx, w.id, method, path, body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
		if status != want {
			return nil, fmt.Errorf("%s %s: %d %s", method, path, status, bytes.TrimSpace(out))
		}
		return out, nil
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(out))
	}
	return out, nil
}
