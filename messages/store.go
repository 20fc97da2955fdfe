package messages

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Store is the module's writes and reads over the shared session runner,
// each one script (lua/messages_*.lua).
type Store struct {
	*sessionstore.Store
	cfg Config
}

// Stored is what a write answered: the stored messages, and whether they
// were written now (false: a retry, nothing written).
type Stored struct {
	Messages [][]byte
	Created  bool
}

// Append stores msgs chained in order under parent, all or nothing.
// ifMatch is the latest leaf the caller expects (nil: no check); key the
// Idempotency-Key or "".
func (s *Store) Append(ctx context.Context, user, session string, msgs []message, parent parentRef, ifMatch *string, key string) (Stored, error) {
	args := make([]string, 0, 7+7*len(msgs))
	if ifMatch != nil {
		args = append(args, "1", *ifMatch)
	} else {
		args = append(args, "0", "")
	}
	args = append(args, parent.Mode, parent.ID, strconv.Itoa(s.cfg.MaxMessages), key,
		strconv.FormatInt(s.cfg.CompactAfterTokens, 10))
	for _, m := range msgs {
		args = append(args, m.ID, m.FP, strconv.FormatInt(m.Tokens, 10), string(m.Body))
		args = append(args, s.searchArgs(m)...)
	}
	msg, err := s.Exec(ctx, lua.MessagesAppend, user, session, args...)
	if err != nil {
		return Stored{}, err
	}
	return s.storedReply(lua.MessagesAppend.Name, msg, user, session)
}

// storedReply decodes a writing script's reply: {1|2, message...} written
// (2: it started the session), {0, message...} a retry, {-1, code, detail}
// a refusal.
func (s *Store) storedReply(op string, msg rueidis.RedisMessage, user, session string) (Stored, error) {
	arr, err := msg.ToArray()
	if err != nil || len(arr) == 0 {
		return Stored{}, redisstore.Wrap(op, errors.Join(err, errors.New("unexpected reply")))
	}
	flag, err := arr[0].AsInt64()
	if err != nil {
		return Stored{}, redisstore.Wrap(op, err)
	}
	if flag < 0 {
		return Stored{}, s.refusal(arr[1:], user, session)
	}
	if flag == 2 {
		sessionstore.CountStarted()
	}
	out := Stored{Created: flag == 1 || flag == 2} // 3: replaced
	for _, m := range arr[1:] {
		if v, err := m.ToString(); err == nil {
			out.Messages = append(out.Messages, []byte(v))
		}
	}
	return out, nil
}

// refusal turns a script's {code, detail} into the error the client sees.
func (s *Store) refusal(arr []rueidis.RedisMessage, user, session string) error {
	var code, detail string
	if len(arr) > 0 {
		code, _ = arr[0].ToString()
	}
	if len(arr) > 1 {
		detail, _ = arr[1].ToString()
	}
	switch code {
	case "wrong_type":
		return redisstore.Refuse(redisstore.ErrConflict, "key_wrong_type", "%s (another program wrote it); nothing was changed", detail)
	case "leaf_moved":
		if detail == "" {
			detail = "none"
		}
		return redisstore.Refuse(redisstore.ErrPrecondition, "leaf_moved", "the latest leaf of session %s/%s is %s, not the one If-Match names; nothing was written", user, session, detail)
	case "id_conflict":
		return redisstore.Refuse(redisstore.ErrConflict, "id_conflict", "message %s is already stored with other fields; nothing was written", detail)
	case "unknown_parent":
		return sidecar.BadRequest("unknown_parent", "field \"parent_id\": session %s/%s has no message %s", user, session, detail)
	case "session_full":
		return redisstore.Refuse(redisstore.ErrConflict, "session_full", "session %s/%s holds %s messages and may hold at most %d (SESSION_MAX_MESSAGES); nothing was written", user, session, detail, s.cfg.MaxMessages)
	case "not_found":
		if detail == "" {
			return redisstore.ErrNotFound
		}
		return redisstore.NotFound("session %s/%s has no message %s", user, session, detail)
	case "changed":
		return errChanged
	case "has_children":
		return redisstore.Refuse(redisstore.ErrConflict, "has_children", "message %s has children: delete them first, or pass ?subtree=true to delete it with every descendant", detail)
	case "session_exists":
		return redisstore.Refuse(redisstore.ErrConflict, "session_exists", "session %s/%s already exists; nothing was written", user, detail)
	case "session_ended":
		return redisstore.Refuse(redisstore.ErrConflict, "session_ended", "session %s/%s already ended (%s)", user, session, detail)
	case "invalid_range":
		return sidecar.BadRequest("invalid_range", "from_id..to_id: %s", detail)
	case "compaction_overlap":
		return redisstore.Refuse(redisstore.ErrConflict, "compaction_overlap", "the range partly overlaps compaction %s in force (a compaction may cover earlier ones whole, never in part); nothing was written", detail)
	case "splits_tool_call":
		return sidecar.BadRequest("splits_tool_call", "the range splits tool call %s from its result: take both or neither", detail)
	case "too_many_compactions":
		return redisstore.Refuse(redisstore.ErrConflict, "too_many_compactions", "the session holds %s compactions in force, the most it may; cover some with a wider one", detail)
	case "invalid_cursor":
		return sidecar.BadRequest("invalid_cursor", "message %s is not on the path read (before/after must name a message of that path)", detail)
	}
	return redisstore.Wrap("messages", errors.New("unexpected refusal "+code))
}

// errChanged: the message a PATCH read changed before its write (retried).
var errChanged = redisstore.Refuse(redisstore.ErrConflict, "concurrent_update",
	"the message kept changing while this PATCH applied; nothing was written: retry")

// Page is a page of a path.
type Page struct {
	Messages     [][]byte
	Total        int64
	TotalTokens  int64
	NextCursor   string
	LatestTokens int64 // tokens of the latest path
	Cut          bool  // the byte cap cut the page
}

// PageQuery says which page of which path.
type PageQuery struct {
	Leaf   string // "" = the latest leaf
	Desc   bool
	Limit  int
	Cursor string // "", "before" or "after"
	At     string // the cursor's message id
	Offset int
	Raw    bool // compaction overlays not applied
}

// Path reads a page of the path root..leaf.
func (s *Store) Path(ctx context.Context, user, session string, q PageQuery) (Page, error) {
	order, raw := "asc", "0"
	if q.Desc {
		order = "desc"
	}
	if q.Raw {
		raw = "1"
	}
	// the answer's bytes count against the host's in-flight byte budget,
	// which may cut the page shorter than SIDECAR_MAX_ANSWER_BYTES
	maxBytes, done, err := sidecar.ReserveAnswer(ctx, s.cfg.MaxAnswerBytes)
	if err != nil {
		return Page{}, err
	}
	size := 0
	defer func() { done(size) }()
	msg, err := s.Exec(ctx, lua.MessagesRead, user, session, "path", q.Leaf, order, strconv.Itoa(q.Limit),
		q.Cursor, q.At, strconv.Itoa(q.Offset), strconv.Itoa(maxBytes), raw)
	if err != nil {
		return Page{}, err
	}
	arr, err := msg.ToArray()
	if err == nil && len(arr) > 0 {
		if n, _ := arr[0].AsInt64(); n < 0 {
			return Page{}, s.refusal(arr[1:], user, session)
		}
	}
	if err != nil || len(arr) < 4 {
		return Page{}, redisstore.Wrap(lua.MessagesRead.Name, errors.Join(err, errors.New("unexpected reply")))
	}
	var p Page
	p.Total, _ = arr[0].AsInt64()
	p.TotalTokens, _ = arr[1].AsInt64()
	p.NextCursor, _ = arr[2].ToString()
	p.LatestTokens, _ = arr[3].AsInt64()
	if len(arr) > 4 {
		cut, _ := arr[4].AsInt64()
		p.Cut = cut == 1
		for _, m := range arr[5:] {
			if v, err := m.ToString(); err == nil {
				p.Messages = append(p.Messages, []byte(v))
				size += len(v) + 1
			}
		}
	}
	return p, nil
}

// One reads message id (a not-found refusal when the session has none).
func (s *Store) One(ctx context.Context, user, session, id string) ([]byte, error) {
	msg, err := s.Exec(ctx, lua.MessagesRead, user, session, "one", id)
	if errors.Is(err, redisstore.ErrNotFound) {
		return nil, redisstore.NotFound("session %s/%s has no message %s", user, session, id)
	}
	if err != nil {
		return nil, err
	}
	v, err := msg.ToString()
	if err != nil {
		return nil, redisstore.Wrap(lua.MessagesRead.Name, err)
	}
	return []byte(v), nil
}

// Children reads up to limit children of message id, oldest first.
func (s *Store) Children(ctx context.Context, user, session, id string, limit int) ([][]byte, error) {
	// The script has no byte cap for children (only their count): the
	// answer is counted against the in-flight byte budget as a page's is,
	// which bounds how many are read at once, not one answer's size.
	_, done, err := sidecar.ReserveAnswer(ctx, s.cfg.MaxAnswerBytes)
	if err != nil {
		return nil, err
	}
	size := 0
	defer func() { done(size) }()
	msg, err := s.Exec(ctx, lua.MessagesRead, user, session, "children", id, strconv.Itoa(limit))
	if err != nil {
		return nil, err
	}
	st, err := s.storedReply(lua.MessagesRead.Name, msg, user, session)
	for _, m := range st.Messages {
		size += len(m) + 1
	}
	return st.Messages, err
}

// Put stores m by id: a new message as an append under parent, a held one
// in place. expect is the stored message a PATCH was made from ("" none);
// patch refuses a missing id instead of creating it.
func (s *Store) Put(ctx context.Context, user, session string, m message, parent parentRef, expect []byte, patch bool) (Stored, error) {
	mode := "put"
	if patch {
		mode = "patch"
	}
	args := []string{m.ID, m.FP, strconv.FormatInt(m.Tokens, 10), string(m.Body),
		string(expect), mode, parent.Mode, parent.ID, strconv.Itoa(s.cfg.MaxMessages)}
	args = append(append(args, s.searchArgs(m)...), strconv.FormatInt(s.cfg.CompactAfterTokens, 10))
	msg, err := s.Exec(ctx, lua.MessagesPut, user, session, args...)
	if err != nil {
		return Stored{}, err
	}
	return s.storedReply(lua.MessagesPut.Name, msg, user, session)
}

// Delete deletes message id (with its descendants when subtree); it
// returns how many messages went.
func (s *Store) Delete(ctx context.Context, user, session, id string, subtree bool) (int64, error) {
	flag := "0"
	if subtree {
		flag = "1"
	}
	return s.count(ctx, lua.MessagesDelete, user, session, id, flag)
}

// Clear removes every message of the session; it returns how many went.
func (s *Store) Clear(ctx context.Context, user, session string) (int64, error) {
	n, err := s.count(ctx, lua.MessagesClear, user, session)
	if errors.Is(err, redisstore.ErrNotFound) {
		return 0, redisstore.NotFound("no session %s/%s", user, session)
	}
	return n, err
}

// count runs a script answering {1, n} or a refusal.
func (s *Store) count(ctx context.Context, script *lua.Script, user, session string, args ...string) (int64, error) {
	msg, err := s.Exec(ctx, script, user, session, args...)
	if err != nil {
		return 0, err
	}
	arr, err := msg.ToArray()
	if err != nil || len(arr) < 2 {
		return 0, redisstore.Wrap(script.Name, errors.Join(err, errors.New("unexpected reply")))
	}
	if flag, _ := arr[0].AsInt64(); flag < 0 {
		return 0, s.refusal(arr[1:], user, session)
	}
	n, err := arr[1].AsInt64()
	if err != nil {
		return 0, redisstore.Wrap(script.Name, err)
	}
	return n, nil
}

// Pop removes the latest leaf and returns it.
func (s *Store) Pop(ctx context.Context, user, session string) ([]byte, error) {
	msg, err := s.Exec(ctx, lua.MessagesPop, user, session)
	if err != nil {
		return nil, err
	}
	st, err := s.storedReply(lua.MessagesPop.Name, msg, user, session)
	if errors.Is(err, redisstore.ErrNotFound) {
		return nil, redisstore.NotFound("session %s/%s has no messages", user, session)
	}
	if err != nil {
		return nil, err
	}
	if len(st.Messages) != 1 {
		return nil, redisstore.Wrap(lua.MessagesPop.Name, errors.New("unexpected reply"))
	}
	return st.Messages[0], nil
}

// searchArgs are m's search arguments for a script, or none when
// SEARCH_INDEX is off.
func (s *Store) searchArgs(m message) []string {
	if !s.cfg.SearchIndex {
		return []string{"", "0", ""}
	}
	return m.searchArgs()
}
