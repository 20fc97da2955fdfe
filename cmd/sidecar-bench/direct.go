package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentsidecar/agentsidecar/cognee"
	"github.com/agentsidecar/agentsidecar/locks"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessions"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/usage"
)

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
		st, _, err := t.entries.Append(ctx, w.user, w.session, id, entry, search.OnDemand)
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
		lk := locks.KeysOf(w.lockName)
		vals, err := locks.AcquireScript.Exec(ctx, client,
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
		n, err := locks.ReleaseScript.Exec(ctx, client,
			[]string{locks.KeysOf(w.lockName).Lock, locks.KeysOf(w.lockName).Meta},
			[]string{token, locks.ReleaseChannel, w.lockName}).AsInt64()
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
		if _, _, err := t.entries.Append(ctx, w.user, w.session, id, entry, search.OnDemand); err != nil {
			return fmt.Errorf("seeding %s/%s: %w", w.user, w.session, err)
		}
	}
	return nil
}
