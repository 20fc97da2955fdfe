package messages

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Transaction types (POST .../messages/transactions).
const (
	TxAppendItems         = "append_items"
	TxReplaceSuffix       = "replace_suffix"
	TxReplaceFunctionCall = "replace_function_call"
	TxReplaceHistory      = "replace_history"
)

// MaxOperationID bounds an operation id (printable ASCII, as an
// Idempotency-Key).
const MaxOperationID = 255

// txRetries bounds the tries of a transaction whose suffix changed between
// the read that compared it and the script (each try one read and one
// script).
const txRetries = 5

// txIn is a transaction as a client sends it.
type txIn struct {
	OperationID    *string     `json:"operation_id"`
	Type           string      `json:"type"`
	Messages       []messageIn `json:"messages"`
	ExpectedSuffix []messageIn `json:"expected_suffix"`
	CallID         *string     `json:"call_id"`
	Message        *messageIn  `json:"message"`
	// Replacements: several replace_function_calls in one transaction,
	// applied in order (instead of call_id and message)
	Replacements []callReplacement `json:"replacements"`
	// ExpectedLeaf (replace_history, optional): the id of the latest
	// message the caller read, "" for none; another latest leaf refuses
	ExpectedLeaf *string `json:"expected_leaf"`
	// Part and More (append_items, optional): an operation sent in parts
	// (0, 1, ...), staged until the part without more (partAppend)
	Part *int `json:"part"`
	More bool `json:"more"`
}

// txEntry is a message a transaction writes: new, or one of the replaced
// segment kept as stored (Msg.ID only).
type txEntry struct {
	Keep bool
	Msg  message
}

// txSeg is a message of the replaced segment as the caller read it.
type txSeg struct{ ID, FP string }

// txArgs is one run of messages_transaction.lua.
type txArgs struct {
	OpID, Digest string
	Whole        bool // every message goes (replace_history); Segment: the expected leaf, if any
	Differs      bool // the stored suffix differs from the expected one
	Segment      []txSeg
	Entries      []txEntry
}

// errSuffixMismatch: the suffix changed between the read and the script.
var errSuffixMismatch = errors.New("suffix_mismatch")

func suffixMismatch(user, session string) error {
	return redisstore.Refuse(redisstore.ErrConflict, "suffix_mismatch",
		"the latest messages of session %s/%s are not the expected suffix; nothing was written", user, session)
}

// Transaction runs one history transaction: the messages written (or,
// for a repeat, those of the first time still held; Created false).
func (s *Store) Transaction(ctx context.Context, user, session string, t txArgs) (Stored, error) {
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	kind := "suffix"
	if t.Whole {
		kind = "whole"
	}
	// a repeat answers the first time's messages as stored: a read,
	// counted against the answer's byte cap
	maxBytes, done, err := sidecar.ReserveAnswer(ctx, s.maxAnswer)
	if err != nil {
		return Stored{}, err
	}
	var st Stored
	defer func() { done(answerSize(st.Messages)) }()
	if msgs, ok := appendOnly(t); ok && staged(msgs) {
		st, err = s.stagedAppend(ctx, user, session, msgs, stageReq{key: "tx " + t.OpID, digest: t.Digest,
			parent: parentRef{Mode: "latest"}, maxBytes: maxBytes})
		return st, err
	}
	if msgs, ok := newHistory(t); ok && staged(msgs) {
		q := stageReq{key: "tx " + t.OpID, digest: t.Digest, parent: parentRef{Mode: "whole"}, maxBytes: maxBytes}
		if len(t.Segment) == 1 {
			q.ifMatch = &t.Segment[0].ID
		}
		st, err = s.stagedAppend(ctx, user, session, msgs, q)
		return st, err
	}
	args := make([]string, 0, 8+2*len(t.Segment)+8*len(t.Entries))
	args = append(args, t.OpID, t.Digest, kind, flag(t.Differs), strconv.Itoa(s.cfg.MaxMessages),
		strconv.FormatInt(s.cfg.CompactAfterTokens, 10), strconv.Itoa(maxBytes), strconv.Itoa(len(t.Segment)))
	for _, g := range t.Segment {
		args = append(args, g.ID, g.FP)
	}
	left, later := SearchCallTerms, false
	for _, e := range t.Entries {
		if e.Keep {
			args = append(args, "keep", e.Msg.ID, "", "", "", "", "")
			continue
		}
		m := e.Msg
		args = append(args, "new", m.ID, m.FP, strconv.FormatInt(m.Tokens, 10), string(m.Body))
		a, l := s.batchSearchArgs(m, &left)
		args, later = append(args, a...), later || l
	}
	r, err := s.Run(ctx, luaScripts.Transaction, user, session, args...)
	if err != nil {
		return Stored{}, err
	}
	if !r.Dup {
		if status, err := r.String(0); err == nil && status == "suffix_mismatch" {
			return Stored{}, errSuffixMismatch
		}
	}
	st, err = s.stored(luaScripts.Transaction.Name, r, user, session)
	// a segment of more than one message may have been too big to take
	// out of the index in the script (search.retire), which then dropped
	// the session's messages from it: the catch-up takes the rest in
	s.deferred(st, err, later || (!t.Whole && len(t.Segment) > 1), user, session)
	return st, err
}

// appendOnly is the messages of t when it only appends (append_items).
func appendOnly(t txArgs) ([]message, bool) {
	if t.Whole || len(t.Segment) > 0 || t.Differs {
		return nil, false
	}
	msgs := make([]message, len(t.Entries))
	for i, e := range t.Entries {
		if e.Keep {
			return nil, false
		}
		msgs[i] = e.Msg
	}
	return msgs, true
}

// newHistory is the messages of t when it replaces the whole history
// (replace_history, which keeps no message as stored).
func newHistory(t txArgs) ([]message, bool) {
	if !t.Whole || t.Differs || len(t.Entries) == 0 {
		return nil, false
	}
	return appendOnly(txArgs{Entries: t.Entries})
}

// tail reads the newest n messages of the latest raw path (no compaction
// overlays: what the adapters read), oldest first, following the cursors
// (a page cut by the answer's byte cap continues).
func (s *Store) tail(ctx context.Context, user, session string, n int) ([][]byte, error) {
	var out [][]byte
	q := PageQuery{Desc: true, Raw: true}
	for len(out) < n {
		q.Limit = min(n-len(out), MaxLimit)
		p, err := s.Path(ctx, user, session, q)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Messages...)
		if p.NextCursor == "" || len(p.Messages) == 0 {
			break
		}
		q.Cursor, q.At = "after", p.NextCursor
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// storedIn decodes a stored message; its raw fields are the bytes sent, so
// its fingerprint is the one its tree node holds.
func storedIn(b []byte) (messageIn, error) {
	var m messageIn
	if err := json.Unmarshal(b, &m); err != nil {
		return m, redisstore.Wrap(luaScripts.Read.Name, err)
	}
	return m, nil
}

// jsonEqual reports whether two raw JSON values are the same value (member
// order and number spelling aside), absent and null alike.
func jsonEqual(a, b json.RawMessage) bool {
	if !present(a) || !present(b) {
		return present(a) == present(b)
	}
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func strEqual(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// sameMessage reports whether stored message got is what expected
// describes: the same role, content, parts, tool fields, item, format and
// metadata (as JSON values), and the same id when expected names one.
func sameMessage(expected, got messageIn) bool {
	if expected.ID != nil && (got.ID == nil || *expected.ID != *got.ID) {
		return false
	}
	return expected.Role == got.Role && jsonEqual(expected.Content, got.Content) && jsonEqual(expected.Parts, got.Parts) &&
		jsonEqual(expected.ToolCalls, got.ToolCalls) && strEqual(expected.ToolCallID, got.ToolCallID) &&
		jsonEqual(expected.Item, got.Item) && strEqual(expected.Format, got.Format) && jsonEqual(expected.Metadata, got.Metadata)
}

// digest is the transaction's identity: body without its operation id,
// its members sorted, as SHA1.
func txDigest(body []byte) (string, error) {
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	delete(v, "operation_id")
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	h := sha1.Sum(b)
	return hex.EncodeToString(h[:]), nil
}

// checkNew checks the messages a transaction writes (field names under
// field): 0 to MaxBatch, each with no parent_id (they are chained on the
// latest path), ids distinct.
func checkNew(field string, in []messageIn, maxItem int) ([]txEntry, error) {
	if len(in) > MaxBatch {
		return nil, sidecar.BadRequest("invalid_field", "field %q holds %d messages; at most %d", field, len(in), MaxBatch)
	}
	out := make([]txEntry, len(in))
	seen := map[string]bool{}
	for i := range in {
		at := field + "[" + strconv.Itoa(i) + "]."
		if in[i].ParentID != nil {
			return nil, bad(at+"parent_id", "must be absent: a transaction's messages are chained on the latest path")
		}
		msg, err := in[i].check(at, maxItem)
		if err != nil {
			return nil, err
		}
		if seen[msg.ID] {
			return nil, bad(at+"id", "id %s appears twice in the transaction", msg.ID)
		}
		seen[msg.ID] = true
		out[i] = txEntry{Msg: msg}
	}
	return out, nil
}

func (m *Module) transaction(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	body, err := sidecar.ReadJSON(r)
	if err != nil {
		return err
	}
	var in txIn
	if err := sidecar.DecodeJSONBytesLax(body, &in, inItem); err != nil {
		return err
	}
	list, err := checkTxFields(in)
	if err != nil {
		return err
	}
	t, err := m.txArgsOf(in, body)
	if err != nil {
		return err
	}
	if in.Part != nil {
		st, staged, err := m.store.partAppend(r.Context(), user, session, t, *in.Part, in.More)
		if err != nil {
			return err
		}
		if in.More && st.Messages == nil {
			// staged, not yet visible
			sidecar.WriteBody(w, http.StatusAccepted, []byte(`{"operation_id":`+string(jsonString(t.OpID))+
				`,"applied":false,"staged":`+strconv.Itoa(staged)+`,"messages":[]}`))
			return nil
		}
		m.writeTx(w, t.OpID, st)
		return nil
	}
	st, err := m.applyTx(r.Context(), user, session, in, t, list)
	if err != nil {
		return err
	}
	m.writeTx(w, t.OpID, st)
	return nil
}

// writeTx writes a transaction's answer.
func (m *Module) writeTx(w http.ResponseWriter, op string, st Stored) {
	status := m.writeStatus(w, st)
	head := `{"operation_id":` + string(jsonString(op)) + `,"applied":` + strconv.FormatBool(st.Created) + `,"messages":[`
	sidecar.WriteBody(w, status, listObject(head, st.Messages, "]}"))
}

// txFields is which fields each type of transaction takes: messages,
// expected_suffix, and call_id with message (or replacements).
var txFields = map[string][3]bool{
	TxAppendItems: {true, false, false}, TxReplaceSuffix: {true, true, false},
	TxReplaceFunctionCall: {false, false, true}, TxReplaceHistory: {true, false, false},
}

// checkTxFields refuses a missing operation id, a type the API does not
// know, and every field its type does not take or lacks (expected_leaf:
// txArgsOf); list: a replace_function_call given as
// replacements (rather than call_id and message).
func checkTxFields(in txIn) (list bool, err error) {
	if in.OperationID == nil || !validOperationID(*in.OperationID) {
		return false, bad("operation_id", "is required: 1-%d printable ASCII characters, the same when the transaction is retried", MaxOperationID)
	}
	w3, ok := txFields[in.Type]
	if !ok {
		return false, bad("type", "must be %s, %s, %s or %s", TxAppendItems, TxReplaceSuffix, TxReplaceFunctionCall, TxReplaceHistory)
	}
	list = in.Replacements != nil
	if in.Part != nil && (in.Type != TxAppendItems || *in.Part < 0) {
		return false, bad("part", "is a part's number (0, 1, ...) of an %s operation sent in parts", TxAppendItems)
	}
	if in.More && in.Part == nil {
		return false, bad("more", "needs part: the number of this part (0, 1, ...)")
	}
	for _, f := range []struct {
		name      string
		has, want bool
	}{
		{"messages", in.Messages != nil, w3[0]}, {"expected_suffix", in.ExpectedSuffix != nil, w3[1]},
		{"call_id", in.CallID != nil, w3[2] && !list}, {"message", in.Message != nil, w3[2] && !list},
		{"replacements", list, list && w3[2]},
	} {
		if f.has != f.want {
			if f.want {
				return false, bad(f.name, "is required for a %s transaction", in.Type)
			}
			return false, bad(f.name, "is not a field of a %s transaction", in.Type)
		}
	}
	return list, nil
}

// txArgsOf is the script's arguments of a transaction checkTxFields
// passed: its operation id and body digest, the new messages checked, the
// expected leaf of a replace_history.
func (m *Module) txArgsOf(in txIn, body []byte) (txArgs, error) {
	digest, err := txDigest(body)
	if err != nil {
		return txArgs{}, err
	}
	t := txArgs{OpID: *in.OperationID, Digest: digest}
	if t.Entries, err = checkNew("messages", in.Messages, m.limits.MaxItemBytes); err != nil {
		return txArgs{}, err
	}
	if in.ExpectedLeaf != nil {
		if in.Type != TxReplaceHistory {
			return txArgs{}, bad("expected_leaf", "is not a field of a %s transaction", in.Type)
		}
		if *in.ExpectedLeaf != "" && !sidecar.ValidID(*in.ExpectedLeaf) {
			return txArgs{}, bad("expected_leaf", "must be a message id, or \"\" for an empty history")
		}
		t.Segment = []txSeg{{ID: *in.ExpectedLeaf}}
	}
	if in.Type == TxAppendItems && len(t.Entries) == 0 {
		return txArgs{}, bad("messages", "must hold 1 to %d messages", MaxBatch)
	}
	return t, nil
}

// applyTx runs a checked transaction of its type.
func (m *Module) applyTx(ctx context.Context, user, session string, in txIn, t txArgs, list bool) (Stored, error) {
	switch in.Type {
	case TxReplaceHistory:
		t.Whole = true
		st, err := m.store.Transaction(ctx, user, session, t)
		if errors.Is(err, errSuffixMismatch) {
			err = redisstore.Refuse(redisstore.ErrConflict, "suffix_mismatch",
				"the latest message of session %s/%s is not expected_leaf %q: the history changed since it was read; nothing was written",
				user, session, *in.ExpectedLeaf)
		}
		return st, err
	case TxReplaceSuffix:
		return m.replaceSuffix(ctx, user, session, t, in.ExpectedSuffix)
	case TxReplaceFunctionCall:
		reps := in.Replacements
		if !list {
			reps = []callReplacement{{CallID: in.CallID, Message: in.Message}}
		}
		return m.replaceFunctionCall(ctx, user, session, t, reps, list)
	}
	return m.store.Transaction(ctx, user, session, t) // TxAppendItems
}

func validOperationID(s string) bool {
	if s == "" || len(s) > MaxOperationID {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// replaceSuffix compares the latest raw path's last messages with expected
// and replaces them by t.Entries in one script, which checks that they are
// still the messages compared (else the read and the comparison again).
func (m *Module) replaceSuffix(ctx context.Context, user, session string, t txArgs, expected []messageIn) (Stored, error) {
	if len(expected) > MaxBatch {
		return Stored{}, bad("expected_suffix", "holds %d messages; at most %d", len(expected), MaxBatch)
	}
	for i := range expected {
		if _, err := expected[i].check("expected_suffix["+strconv.Itoa(i)+"].", m.limits.MaxItemBytes); err != nil {
			return Stored{}, err
		}
	}
	for try := 0; ; try++ {
		got, err := m.store.tail(ctx, user, session, len(expected))
		if err != nil {
			return Stored{}, err
		}
		t.Segment, t.Differs = t.Segment[:0], len(got) != len(expected)
		for i := 0; i < len(got) && !t.Differs; i++ {
			s, err := storedIn(got[i])
			if err != nil {
				return Stored{}, err
			}
			if !sameMessage(expected[i], s) {
				t.Differs = true
				break
			}
			t.Segment = append(t.Segment, txSeg{ID: *s.ID, FP: s.fingerprint()})
		}
		if t.Differs {
			t.Segment = nil
		}
		st, err := m.store.Transaction(ctx, user, session, t)
		if errors.Is(err, errSuffixMismatch) {
			if t.Differs || try >= txRetries {
				return Stored{}, suffixMismatch(user, session)
			}
			continue
		}
		return st, err
	}
}
