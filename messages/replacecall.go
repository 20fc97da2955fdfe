package messages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/agentsidecar/agentsidecar/redisstore"
)

// The replace_function_call transaction (OpenAI Agents' session method):
// each call's first message replaced in place, its later ones gone, the
// segment from the first change rewritten in one transaction.

// callReplacement is one replace_function_call: the call, its new message.
type callReplacement struct {
	CallID  *string    `json:"call_id"`
	Message *messageIn `json:"message"`
}

// MaxReplacements bounds the replacements of one replace_function_call.
const MaxReplacements = 100

// pathEntry is a message of the path while replacements apply: orig its
// index on the path read, msg its new fields (nil: kept as stored).
type pathEntry struct {
	orig int
	id   string
	call string
	msg  *messageIn
}

// replaceFunctionCall applies the SDK's replace_function_call for each of
// reps in order, on the latest raw path: the first message whose item is
// the function call gets the replacement (keeping its id and place), the
// later ones of that call go. The segment from the first message changed
// to the leaf is rewritten in one transaction, its other messages kept as
// stored. A call no message holds is skipped; none held: a not-found
// refusal, nothing written.
func (m *Module) replaceFunctionCall(ctx context.Context, user, session string, t txArgs, reps []callReplacement, listed bool) (Stored, error) {
	if err := checkReplacements(reps, listed, m.limits.MaxItemBytes); err != nil {
		return Stored{}, err // refused before anything is read
	}
	for try := 0; ; try++ {
		cur, seg, err := m.callPath(ctx, user, session)
		if err != nil {
			return Stored{}, err
		}
		cur, first := replaceCalls(cur, reps)
		// refused here unless a repeat: the script checks the operation id
		// first, so a retry after the call left the path answers the first
		// result
		if refusal := callsRefusal(user, session, len(seg), first); refusal != nil {
			t.Segment, t.Entries, t.Differs = nil, nil, true
			st, err := m.store.Transaction(ctx, user, session, t)
			if errors.Is(err, errSuffixMismatch) {
				return Stored{}, refusal
			}
			return st, err
		}
		t.Segment = seg[first:]
		if t.Entries, err = replacedEntries(cur, first, m.limits.MaxItemBytes); err != nil {
			return Stored{}, err
		}
		st, err := m.store.Transaction(ctx, user, session, t)
		if errors.Is(err, errSuffixMismatch) && try < txRetries {
			continue
		}
		if errors.Is(err, errSuffixMismatch) {
			return Stored{}, suffixMismatch(user, session)
		}
		return st, err
	}
}

// checkReplacements refuses a replacement list out of bounds, and any
// replacement that is not a function call item of its call_id, or whose
// message does not pass a message's checks.
func checkReplacements(reps []callReplacement, listed bool, maxItem int) error {
	if len(reps) == 0 || len(reps) > MaxReplacements {
		return bad("replacements", "must hold 1 to %d replacements", MaxReplacements)
	}
	for i, r := range reps {
		at := ""
		if listed {
			at = "replacements[" + strconv.Itoa(i) + "]."
		}
		if r.CallID == nil || *r.CallID == "" || len(*r.CallID) > MaxNameLength {
			return bad(at+"call_id", "must be 1-%d bytes", MaxNameLength)
		}
		if r.Message == nil {
			return bad(at+"message", "is required")
		}
		if r.Message.ParentID != nil {
			return bad(at+"message.parent_id", "must be absent: the message takes the replaced one's place")
		}
		if got := callOf(r.Message.Item); got != *r.CallID {
			return bad(at+"message.item", "must be a function_call item of call %s", *r.CallID)
		}
		if _, err := r.Message.check(at+"message.", maxItem); err != nil {
			return err
		}
	}
	return nil
}

// callPath reads the latest raw path: each message as a pathEntry (its
// call id), and as the segment a transaction checks (id, fingerprint).
func (m *Module) callPath(ctx context.Context, user, session string) ([]pathEntry, []txSeg, error) {
	path, err := m.store.tail(ctx, user, session, MaxMessagesCeiling)
	if err != nil {
		return nil, nil, err
	}
	cur := make([]pathEntry, len(path))
	seg := make([]txSeg, len(path))
	for i, raw := range path {
		s, err := storedIn(raw)
		if err != nil {
			return nil, nil, err
		}
		cur[i] = pathEntry{orig: i, id: *s.ID, call: callOf(s.Item)}
		seg[i] = txSeg{ID: *s.ID, FP: s.fingerprint()}
	}
	return cur, seg, nil
}

// replaceCalls applies reps in order to the path cur: the first message of
// each call takes the replacement, the later ones of that call go. first
// is the path index of the first message changed (len(cur): none).
func replaceCalls(cur []pathEntry, reps []callReplacement) ([]pathEntry, int) {
	first := len(cur)
	for _, r := range reps {
		next := cur[:0:0]
		kept := false
		for _, e := range cur {
			if e.call != *r.CallID {
				next = append(next, e)
				continue
			}
			first = min(first, e.orig)
			if !kept {
				next = append(next, pathEntry{orig: e.orig, id: e.id, call: e.call, msg: r.Message})
				kept = true
			}
		}
		cur = next
	}
	return cur, first
}

// callsRefusal is why the replacements cannot apply to a path of n
// messages whose first change is at first: no call held, or a rewrite
// longer than one transaction; nil when they can.
func callsRefusal(user, session string, n, first int) error {
	if first == n {
		return redisstore.NotFound("the latest path of session %s/%s has no function call of the replacements", user, session)
	}
	if n-first > MaxBatch {
		return redisstore.Refuse(redisstore.ErrConflict, "transaction_too_large",
			"the first call replaced is %d messages from the latest one; a transaction rewrites at most %d; nothing was written", n-first, MaxBatch)
	}
	return nil
}

// replacedEntries is the segment from first rewritten: each message kept
// as stored, or its replacement (keeping its id and place), checked.
func replacedEntries(cur []pathEntry, first, maxItem int) ([]txEntry, error) {
	var out []txEntry
	for _, e := range cur {
		switch {
		case e.orig < first:
		case e.msg == nil:
			out = append(out, txEntry{Keep: true, Msg: message{ID: e.id}})
		default:
			in := *e.msg
			if in.ID == nil {
				in.ID = &e.id
			}
			nm, err := in.check("message.", maxItem)
			if err != nil {
				return nil, err
			}
			out = append(out, txEntry{Msg: nm})
		}
	}
	return out, nil
}

// callOf is the call id of a function call item ({"type": "function_call",
// "callId"|"call_id": id}), or "".
func callOf(item json.RawMessage) string {
	if !present(item) || !bytes.Contains(item, []byte("function_call")) {
		return ""
	}
	var v struct {
		Type   string  `json:"type"`
		CallID *string `json:"callId"`
		Snake  *string `json:"call_id"`
	}
	if json.Unmarshal(item, &v) != nil || v.Type != "function_call" {
		return ""
	}
	if v.CallID != nil {
		return *v.CallID
	}
	if v.Snake != nil {
		return *v.Snake
	}
	return ""
}
