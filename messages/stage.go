package messages

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// A staged append (messages_stage_open.lua) is an append, or a replace_history,
// too big for one bounded script: it opens the session's stage (the append's checks),
// puts its messages a chunk a step where no reader looks, and commits
// them in one O(1) step; readers see the history before or after. Other
// writes of the session's messages wait while the stage lives (Run); a
// stage whose writer died is dropped by the next write, once its lease ran
// out.
const (
	// StageMessages and StageBytes bound one put: at most StageMessages
	// messages and StageBytes of their bodies (one message whatever its
	// size: an item up to SESSION_MAX_ITEM_BYTES). An append past either
	// is staged. Redis writes about 4 µs a KiB of a hash's new values
	// (BENCHMARKS.md): 256 KiB keeps a put near 1.5 ms.
	StageMessages = 100
	StageBytes    = 256 << 10
	// StageLease is how long a stage lives past its last step; a writer
	// that stops for longer loses it to the next write.
	StageLease = 5 * time.Second
	// DropChunk bounds the staged messages one drop step removes.
	DropChunk = 500
	// stageRestarts bounds the restarts of an append whose stage was lost
	// (dropped as abandoned, or the session deleted, between two steps).
	stageRestarts = 3
	// partsDigest is the digest of an operation sent in parts: any of its
	// parts repeated after its commit answers as a repeat.
	partsDigest = "parts"
)

// errStageLost: the stage is no longer this writer's.
var errStageLost = errors.New("the stage was lost")

// staged reports whether msgs take more than one put.
func staged(msgs []message) bool {
	return len(chunks(msgs)) > 1
}

// chunks splits msgs into puts of at most StageMessages messages and
// StageBytes of bodies, a message at least each.
func chunks(msgs []message) [][]message {
	var out [][]message
	from, bytes := 0, 0
	for i, m := range msgs {
		if i > from && (i-from == StageMessages || bytes+len(m.Body) > StageBytes) {
			out = append(out, msgs[from:i])
			from, bytes = i, 0
		}
		bytes += len(m.Body)
	}
	return append(out, msgs[from:])
}

// stageReq is what a staged append checks and stores beside its messages.
type stageReq struct {
	key      string // the ring's key: an Idempotency-Key, "tx <operation id>" or ""
	digest   string // the operation's digest, "" for an append
	parent   parentRef
	ifMatch  *string
	maxBytes int // the byte cap of a repeat's answer
}

// Run is sessionstore.Store.Run for the messages' scripts: a write that
// meets another's staged append waits while its lease runs and tries
// again ('staging'), and drops a stage whose writer died
// ('stage_abandoned') before it tries again. Past StageLease and a second
// of waiting, or at the request's deadline, it is refused
// (concurrent_update).
func (s *Store) Run(ctx context.Context, script *lua.Script, user, session string, args ...string) (lua.Reply, error) {
	wait, deadline := 2*time.Millisecond, time.Now().Add(StageLease+time.Second)
	for {
		r, err := s.Store.Run(ctx, script, user, session, args...)
		switch refusalCode(err) {
		case "stage_abandoned":
			if time.Now().After(deadline) {
				// a drop that does not end the refusal (a stage of another
				// session than this one's) must not spin
				return lua.Reply{}, busy(user, session)
			}
			if err := s.dropStage(ctx, user, session, ""); err != nil {
				return lua.Reply{}, err
			}
			if s.index != nil {
				// a catch-up that met the stage stopped there
				s.index.Touch(user, session)
			}
			continue
		case "staging":
			if time.Now().After(deadline) {
				return lua.Reply{}, busy(user, session)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return lua.Reply{}, busy(user, session)
			case <-t.C:
			}
			wait = min(2*wait, 100*time.Millisecond)
			continue
		}
		return r, err
	}
}

// busy is the refusal of a write that waited for another's staged append
// in vain.
func busy(user, session string) error {
	return redisstore.Refuse(redisstore.ErrConflict, "concurrent_update",
		"session %s/%s is taking a staged append that did not end in time; nothing was written: retry", user, session)
}

// refusalCode is the code of a script's refusal err, or "".
func refusalCode(err error) string {
	var r *redisstore.Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

// dropStage removes the staged messages of token's stage ("": an
// abandoned one, whoever's), DropChunk a step, paced.
func (s *Store) dropStage(ctx context.Context, user, session, token string) error {
	for {
		start := time.Now()
		r, err := s.Store.Run(ctx, luaScripts.StageDrop, user, session, token, strconv.Itoa(DropChunk))
		if refusalCode(err) == "staging" {
			return nil // taken over meanwhile: its writer lives
		}
		if err != nil {
			return err
		}
		if done, err := r.Int(1); err != nil || done == 1 {
			return err
		}
		pace(ctx, time.Since(start))
	}
}

// abandon drops this writer's stage after a failed step, with a context
// of its own (the request's may be gone); what it cannot drop, its lease
// leaves to the next write.
func (s *Store) abandon(user, session, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.dropStage(ctx, user, session, token)
}

// pace waits between two steps of one job as long as the last one took
// (at least 100 µs, at most 20 ms), so that a big write leaves Redis to
// other clients at least half of its time rather than sending its steps
// back to back.
func pace(ctx context.Context, took time.Duration) {
	t := time.NewTimer(min(max(took, 100*time.Microsecond), 20*time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// stagedAppend is an append of msgs too big for one script (staged):
// open, the puts, the commit; restarted when the stage is lost between
// two steps. Its answer is an append's.
func (s *Store) stagedAppend(ctx context.Context, user, session string, msgs []message, q stageReq) (Stored, error) {
	for attempt := 0; ; attempt++ {
		st, err := s.stageOnce(ctx, user, session, msgs, q)
		if errors.Is(err, errStageLost) && attempt < stageRestarts {
			continue
		}
		if errors.Is(err, errStageLost) {
			err = busy(user, session)
		}
		return st, err
	}
}

func (s *Store) stageOnce(ctx context.Context, user, session string, msgs []message, q stageReq) (Stored, error) {
	token := newToken()
	st, at, err := s.openStage(ctx, user, session, token, msgs, q, len(msgs))
	if err != nil || at == nil {
		return st, err
	}
	out := Stored{Created: true, Messages: make([][]byte, 0, len(msgs))}
	for i, ch := range chunks(msgs) {
		texts := at.texts(ch)
		if _, err := s.putStage(ctx, user, session, token, i, ch, texts); err != nil {
			s.abandon(user, session, token)
			return Stored{}, err
		}
		out.Messages = append(out.Messages, texts...)
	}
	if _, err := s.commitStage(ctx, user, session, token, len(chunks(msgs)), q.digest); err != nil {
		if !errors.Is(err, errStageLost) {
			s.abandon(user, session, token)
		}
		return Stored{}, err
	}
	return out, nil
}

// stageAt is where an open stage's next messages go: under last ("" for a
// root), with the stage's created_at (quoted, as stored).
type stageAt struct {
	last, createdAt string
}

// texts are msgs as stored (messages.stored_json: the body with parent_id
// and created_at appended), chained from at.last, which moves to the last
// of them.
func (at *stageAt) texts(msgs []message) [][]byte {
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		// m.Body is a JSON object the sidecar encoded: {"id":...}, never
		// empty, with no space after its closing brace
		parent := "null"
		if at.last != "" {
			parent = `"` + at.last + `"`
		}
		b := make([]byte, 0, len(m.Body)+len(parent)+len(at.createdAt)+28)
		b = append(b, m.Body[:len(m.Body)-1]...)
		b = append(b, `,"parent_id":`...)
		b = append(b, parent...)
		b = append(b, `,"created_at":`...)
		b = append(b, at.createdAt...)
		out[i] = append(b, '}')
		at.last = m.ID
	}
	return out
}

// openStage opens token's stage for msgs (total: the messages to come, 0
// unknown) and returns where its messages go. at nil: the answer is st or
// err (a repeat, a refusal).
func (s *Store) openStage(ctx context.Context, user, session, token string, msgs []message, q stageReq, total int) (st Stored, at *stageAt, err error) {
	flag, want := "0", ""
	if q.ifMatch != nil {
		flag, want = "1", *q.ifMatch
	}
	first, last := msgs[0], msgs[len(msgs)-1]
	r, err := s.Run(ctx, luaScripts.StageOpen, user, session, token, strconv.FormatInt(StageLease.Milliseconds(), 10),
		flag, want, q.parent.Mode, q.parent.ID, strconv.Itoa(s.cfg.MaxMessages), strconv.Itoa(total), q.key,
		strconv.Itoa(q.maxBytes), q.digest, first.ID, first.FP, last.ID, last.FP)
	if err != nil {
		return Stored{}, nil, err
	}
	if r.Dup {
		st, err := s.stored(stageName, r, user, session)
		return st, nil, err
	}
	status, err := r.String(0)
	if err != nil {
		return Stored{}, nil, redisstore.Wrap(stageName, err)
	}
	switch status {
	case "stage_lost":
		return Stored{}, nil, errStageLost
	case "started", "open":
		if status == "started" {
			sessionstore.CountStarted()
		}
		last, err := r.String(3)
		if err != nil {
			return Stored{}, nil, redisstore.Wrap(stageName, err)
		}
		createdAt, err := r.String(4)
		if err != nil {
			return Stored{}, nil, redisstore.Wrap(stageName, err)
		}
		return Stored{}, &stageAt{last: last, createdAt: createdAt}, nil
	case "held":
		// the first and last messages are stored with these fields: a
		// retry when every message is, answered with what is stored up to
		// the last
		if err := s.heldAsSent(ctx, user, session, msgs, q.parent); err != nil {
			return Stored{}, nil, err
		}
		maxBytes := q.maxBytes
		if maxBytes == 0 {
			maxBytes = s.maxAnswer
		}
		got, err := s.pathTo(ctx, user, session, last.ID, len(msgs), maxBytes)
		return Stored{Messages: got.Messages, Cut: got.Cut}, nil, err
	}
	if status == "leaf_moved" && q.parent.Mode == "whole" {
		return Stored{}, nil, errSuffixMismatch // replace_history's expected_leaf
	}
	return Stored{}, nil, s.outcome(stageName, r, status, user, session)
}

// putStage writes part i of token's stage, ch as texts (stageAt.texts);
// returns the messages staged in all.
func (s *Store) putStage(ctx context.Context, user, session, token string, i int, ch []message, texts [][]byte) (int, error) {
	args := make([]string, 0, 5+4*len(ch))
	args = append(args, token, strconv.FormatInt(StageLease.Milliseconds(), 10), strconv.Itoa(i),
		strconv.Itoa(s.cfg.MaxMessages))
	for j, m := range ch {
		args = append(args, m.ID, m.FP, strconv.FormatInt(m.Tokens, 10), string(texts[j]))
	}
	start := time.Now()
	r, err := s.Run(ctx, luaScripts.StagePut, user, session, args...)
	if err != nil {
		return 0, err
	}
	status, err := r.String(0)
	if err != nil {
		return 0, redisstore.Wrap(stageName, err)
	}
	if status == "stage_lost" {
		return 0, errStageLost
	}
	n, err := r.Int(1)
	if err != nil || (status != "staged" && status != "repeat") {
		return 0, redisstore.Wrap(stageName, fmt.Errorf("status %s: %w", status, err))
	}
	pace(ctx, time.Since(start))
	return int(n), nil
}

// commitStage makes token's parts staged messages visible, in one step;
// returns how many.
func (s *Store) commitStage(ctx context.Context, user, session, token string, parts int, digest string) (int, error) {
	r, err := s.Run(ctx, luaScripts.StageCommit, user, session, token, strconv.Itoa(parts),
		strconv.FormatInt(s.cfg.CompactAfterTokens, 10), digest, string(s.mode))
	if err != nil {
		return 0, err
	}
	status, err := r.String(0)
	if err != nil {
		return 0, redisstore.Wrap(stageName, err)
	}
	switch status {
	case "stage_lost":
		return 0, errStageLost
	case "started":
		sessionstore.CountStarted()
	case "stored":
	default:
		return 0, redisstore.Wrap(stageName, errors.New("unexpected status "+status))
	}
	n, err := r.Int(1)
	if err != nil {
		return 0, redisstore.Wrap(stageName, err)
	}
	if v, _ := r.String(len(r.Values) - 1); v == indexPending && s.index != nil {
		s.index.Known(user)
		s.index.Touch(user, session)
	}
	return int(n), nil
}

// partAppend stages part (0, 1, ...) of operation t, an append_items sent
// in parts, each at most one put; more: parts follow. The last part
// commits them all. Returns the answer and, while more, the messages
// staged so far (nothing is visible yet).
func (s *Store) partAppend(ctx context.Context, user, session string, t txArgs, part int, more bool) (st Stored, n int, err error) {
	msgs, _ := appendOnly(t)
	if len(chunks(msgs)) > 1 {
		return Stored{}, 0, bad("messages", "a part holds at most %d messages and %d bytes of them", StageMessages, StageBytes)
	}
	maxBytes, done, err := sidecar.ReserveAnswer(ctx, s.maxAnswer)
	if err != nil {
		return Stored{}, 0, err
	}
	defer func() { done(answerSize(st.Messages)) }()
	token := "tx " + t.OpID
	q := stageReq{key: token, digest: partsDigest, parent: parentRef{Mode: "latest"}, maxBytes: maxBytes}
	total := 0
	if part > 0 {
		total = -1 // a later part: its stage must be there
	}
	st, at, err := s.openStage(ctx, user, session, token, msgs, q, total)
	if errors.Is(err, errStageLost) {
		err = partsLost(t.OpID)
	}
	if err != nil || at == nil {
		return st, 0, err
	}
	texts := at.texts(msgs)
	n, err = s.putStage(ctx, user, session, token, part, msgs, texts)
	if errors.Is(err, errStageLost) {
		err = partsLost(t.OpID)
	}
	if err != nil || more {
		return Stored{}, n, err
	}
	n, err = s.commitStage(ctx, user, session, token, part+1, partsDigest)
	if errors.Is(err, errStageLost) {
		err = partsLost(t.OpID)
	}
	return Stored{Messages: texts, Created: true, Count: n}, 0, err
}

// partsLost is the refusal of a part whose operation's stage is gone.
func partsLost(op string) error {
	return redisstore.Refuse(redisstore.ErrConflict, "part_missing",
		"the staged parts of operation %s are gone (their lease ran out, or the session was deleted): send the operation again from part 0", op)
}

// pathTo reads the path up to message leaf, its last n messages at most
// within maxBytes (at least one), oldest first: a staged append's repeat.
func (s *Store) pathTo(ctx context.Context, user, session, leaf string, n, maxBytes int) (Stored, error) {
	var out Stored
	q, size := PageQuery{Leaf: leaf, Desc: true, Raw: true}, 0
	for len(out.Messages) < n && !out.Cut {
		q.Limit = min(n-len(out.Messages), MaxLimit)
		p, err := s.Path(ctx, user, session, q)
		if err != nil {
			return Stored{}, err
		}
		for _, m := range p.Messages {
			if size += len(m); size > maxBytes && len(out.Messages) > 0 {
				out.Cut = true
				break
			}
			out.Messages = append(out.Messages, m)
		}
		if p.NextCursor == "" || len(p.Messages) == 0 {
			break
		}
		q.Cursor, q.At = "after", p.NextCursor
	}
	slices.Reverse(out.Messages)
	return out, nil
}

// heldAsSent checks that every message of msgs is stored with its fields
// and its parent (the one before it; the first's as sent, when it names
// one): else the append is 409 id_conflict, naming the first that is not.
// One HMGET of the tree's nodes, MaxBatch fields at most.
func (s *Store) heldAsSent(ctx context.Context, user, session string, msgs []message, parent parentRef) error {
	client, err := s.Conn().Client()
	if err != nil {
		return err
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	keys := SessionKeys(redisstore.Layout{Cluster: s.Conn().Cluster()}, user, session)
	nodes, err := client.Do(ctx, client.B().Hmget().Key(keys.Tree).Field(ids...).Build()).ToArray()
	if err != nil {
		return redisstore.Wrap("messages: held nodes", err)
	}
	if len(nodes) != len(msgs) {
		return redisstore.Wrap("messages: held nodes", fmt.Errorf("%d values for %d fields", len(nodes), len(msgs)))
	}
	for i, m := range msgs {
		// a node: "parent \t jump \t depth \t cum \t seq \t tokens \t
		// fingerprint"; none (a Redis nil) fails as a wrong one
		node, _ := nodes[i].ToString()
		f := strings.Split(node, "\t")
		want := ""
		if i > 0 {
			want = msgs[i-1].ID
		} else if parent.Mode == "id" {
			want = parent.ID
		}
		if len(f) != 7 || f[6] != m.FP || ((i > 0 || parent.Mode != "latest") && f[0] != want) {
			return redisstore.Refuse(redisstore.ErrConflict, "id_conflict",
				"message %s is already stored with other fields; nothing was written", m.ID)
		}
	}
	return nil
}

// stageName names the staged append's scripts in errors.
const stageName = "messages_stage"
