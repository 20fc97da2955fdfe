package main

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/usage"
)

// kind is one measured request type.
type kind int

const (
	opAppend kind = iota
	opRead
	opFeedback
	opUsage
	opLockAcquire
	opLockRelease
	numKinds
)

var kindNames = [numKinds]string{"append", "read", "feedback", "usage", "lock_acquire", "lock_release"}

// mixOps are the names -mix accepts; "lock" is acquire and release in turn.
var mixOps = []string{"append", "read", "feedback", "usage", "lock"}

// mix is the cumulative weights of mixOps.
type mix struct {
	cum   [5]int
	total int
	text  string
}

func parseMix(s string) (mix, error) {
	var m mix
	var w [5]int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			val = "1"
		}
		i := -1
		for j, n := range mixOps {
			if n == strings.TrimSpace(name) {
				i = j
			}
		}
		if i < 0 {
			return m, fmt.Errorf("unknown operation %q (append, read, feedback, usage, lock)", name)
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || n < 0 || n > 1000000 {
			return m, fmt.Errorf("weight of %s: %q is not a whole number 0-1000000", name, val)
		}
		w[i] += n
	}
	var parts []string
	for i, n := range w {
		m.total += n
		m.cum[i] = m.total
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", mixOps[i], n))
		}
	}
	if m.total == 0 {
		return m, errors.New("no operation with a weight above 0")
	}
	m.text = strings.Join(parts, ",")
	return m, nil
}

// pick draws the next request kind for w.
func (m mix) pick(w *worker) kind {
	r := w.rng.IntN(m.total)
	for i, c := range m.cum {
		if r < c {
			if i == 4 { // lock: release the lock this connection holds, else acquire
				if w.lockToken != "" {
					return opLockRelease
				}
				return opLockAcquire
			}
			return kind(i)
		}
	}
	return opRead
}

// worker is one connection's state: its own session and lock, so phases
// and connections never contend on a key.
type worker struct {
	id        int
	user      string
	session   string
	lockName  string
	rng       *rand.Rand
	seq       int
	lockToken string

	// HTTP paths, built once.
	entries, feedbackBase, usage, lock string
}

func newWorker(run, phase string, id, seed int) *worker {
	w := &worker{
		id:       id,
		user:     "bench-" + run + "-" + phase,
		session:  "c" + strconv.Itoa(id),
		lockName: "bench-" + run + "-" + phase + "-c" + strconv.Itoa(id),
		// The same sequence of operations in every phase.
		rng: rand.New(rand.NewPCG(uint64(seed), uint64(id))),
	}
	base := "/v1/users/" + w.user + "/sessions/" + w.session
	w.entries = base + "/entries"
	w.feedbackBase = base + "/entries/"
	w.usage = base + "/usage"
	w.lock = "/v1/locks/" + w.lockName
	return w
}

// target performs one operation of kind k for worker w.
type target interface {
	do(ctx context.Context, w *worker, k kind) error
}

// Fixed request contents: a typical short Q&A entry, a usage post with
// explicit counts, feedback with text and score.
const (
	question     = "What did the user ask about the deployment schedule for the analytics service?"
	answer       = "The analytics service deploys every Tuesday at 14:00 UTC after the integration suite passes; hotfixes go out on demand."
	usageModel   = "gpt-4o-mini"
	feedbackText = "helpful"
	lockTTLms    = 30000
)

func seedID(i int) string { return "seed-" + strconv.Itoa(i) }

func qaID(w *worker) string {
	w.seq++
	return "q" + strconv.Itoa(w.seq)
}

// feedbackTarget picks one of the seeded entries.
func feedbackTarget(w *worker, seeds int) string { return seedID(w.rng.IntN(seeds)) }

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

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

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

// directTarget is the same work without HTTP: the sidecar's store and Lua
// scripts over one rueidis client, as the sidecar runs them.
type directTarget struct {
	conn     *redisstore.Conn
	entries  *sessions.Store // the sessions module's writes
	usage    *usage.Store    // the usage module's
	seeds    int
	lastN    int
	fields   cognee.QAFields
	feedback [][2]string
	result   []byte
}

func newDirectTarget(conn *redisstore.Conn, cfg sessionstore.Config, seeds, lastN int) (*directTarget, error) {
	fb, err := cognee.FeedbackUpdate(json.RawMessage(jsonString(feedbackText)), json.RawMessage("4"))
	if err != nil {
		return nil, err
	}
	pairs := make([][2]string, len(fb))
	for i, f := range fb {
		pairs[i] = [2]string{f.Name, string(f.Value)}
	}
	return &directTarget{
		conn:    conn,
		entries: sessions.NewStore(sessionstore.New(conn, cfg)),
		usage:   &usage.Store{Store: sessionstore.New(conn, cfg)},
		seeds:   seeds,
		lastN:   lastN,
		fields: cognee.QAFields{
			Question: json.RawMessage(jsonString(question)),
			Answer:   json.RawMessage(jsonString(answer)),
		},
		feedback: pairs,
		// What the usage module stores as its answer (priced by the table).
		result: []byte(`{"model":"` + usageModel + `","priced_as":"` + usageModel + `","tokens_in":1200,"tokens_out":350,"tokens_estimated":false,"cost_usd":0.00039,"cost_source":"price_table","error":false}`),
	}, nil
}

func (t *directTarget) do(ctx context.Context, w *worker, k kind) error {
	switch k {
	case opAppend:
		id := qaID(w)
		entry, err := cognee.NewQAEntry(t.fields, id, time.Now())
		if err != nil {
			return err
		}
		st, err := t.entries.Append(ctx, w.user, w.session, id, entry)
		if err == nil && !st.Created {
			err = errors.New("append: qa_id already stored")
		}
		return err
	case opRead:
		_, err := t.entries.LastEntries(ctx, w.user, w.session, t.lastN)
		return err
	case opFeedback:
		_, err := t.entries.UpdateEntry(ctx, w.user, w.session, feedbackTarget(w, t.seeds), t.feedback, nil)
		return err
	case opUsage:
		_, err := t.usage.AddUsage(ctx, w.user, w.session, usage.Usage{
			Model: usageModel, TokensIn: 1200, TokensOut: 350, CostNanoUSD: 390000, Result: t.result,
		})
		return err
	case opLockAcquire:
		client, err := t.conn.Client()
		if err != nil {
			return err
		}
		token := newToken()
		lk := redisstore.Lock(w.lockName)
		vals, err := lua.LockAcquire.Exec(ctx, client,
			[]string{lk.Lock, lk.Fence, lk.Meta},
			[]string{token, strconv.Itoa(lockTTLms), "sidecar-bench", strconv.FormatInt(locks.FenceTTL.Milliseconds(), 10)}).ToArray()
		if err != nil {
			return err
		}
		if n, _ := vals[0].AsInt64(); n != 1 {
			return errors.New("lock acquire: held")
		}
		w.lockToken = token
		return nil
	case opLockRelease:
		client, err := t.conn.Client()
		if err != nil {
			return err
		}
		token := w.lockToken
		w.lockToken = ""
		n, err := lua.LockRelease.Exec(ctx, client,
			[]string{redisstore.Lock(w.lockName).Lock, redisstore.Lock(w.lockName).Meta},
			[]string{token, redisstore.LockReleaseChannel, w.lockName}).AsInt64()
		if err == nil && n != 1 {
			err = fmt.Errorf("lock release: %d", n)
		}
		return err
	}
	return fmt.Errorf("unknown operation %d", k)
}

// newToken is the sidecar's lock token: 128 random bits as 32 hex characters.
func newToken() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// seedSession stores the entries feedback targets, straight into the store.
func seedSession(ctx context.Context, t *directTarget, w *worker) error {
	for i := range t.seeds {
		id := seedID(i)
		entry, err := cognee.NewQAEntry(t.fields, id, time.Now())
		if err != nil {
			return err
		}
		if _, err := t.entries.Append(ctx, w.user, w.session, id, entry); err != nil {
			return fmt.Errorf("seeding %s/%s: %w", w.user, w.session, err)
		}
	}
	return nil
}
