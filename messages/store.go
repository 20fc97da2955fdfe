package messages

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Store is the module's writes and reads over the shared session runner,
// each one script (lua/messages_*.lua).
type Store struct {
	*sessionstore.Store
	cfg       Config
	maxAnswer int         // SIDECAR_MAX_ANSWER_BYTES
	mode      search.Mode // SEARCH_INDEX, parsed
	// index (nil in tests of the store alone): under on-demand an append
	// of a user the pod has not seen with an index goes without its
	// documents; a write that left documents to the catch-up (a batch past
	// SearchCallTerms, or a user the script found indexed) queues it
	index *search.Index
}

// Stored is what a write answered: the stored messages, and whether they
// were written now (false: a retry, nothing written). Cut: a retry's
// answer was cut at the answer's byte cap (Sidecar-Truncated).
type Stored struct {
	Messages [][]byte
	Created  bool
	Cut      bool
	Count    int // the messages written when more than Messages (a commit of parts)
}

// indexPending is the value a write answers last when it stored messages
// without their documents for a user who has an index (an append sent
// without them: search.Probe), or when it dropped the session's index as
// foreign (search/search.lua, current): the catch-up indexes them.
const indexPending = "index_pending"

// Append stores msgs chained in order under parent, all or nothing.
// ifMatch is the latest leaf the caller expects (nil: no check); key the
// Idempotency-Key or "".
func (s *Store) Append(ctx context.Context, user, session string, msgs []message, parent parentRef, ifMatch *string, key string) (Stored, error) {
	// a repeat by Idempotency-Key answers the first append's messages as
	// stored: a read, counted against the answer's byte cap
	maxBytes, done := 0, func(int) {}
	if key != "" {
		var err error
		if maxBytes, done, err = sidecar.ReserveAnswer(ctx, s.maxAnswer); err != nil {
			return Stored{}, err
		}
	}
	st, err := s.append(ctx, user, session, msgs, parent, ifMatch, key, maxBytes)
	done(answerSize(st.Messages))
	return st, err
}

// answerSize is the bytes of msgs.
func answerSize(msgs [][]byte) int {
	n := 0
	for _, m := range msgs {
		n += len(m)
	}
	return n
}

func (s *Store) append(ctx context.Context, user, session string, msgs []message, parent parentRef, ifMatch *string, key string, maxBytes int) (Stored, error) {
	if staged(msgs) {
		return s.stagedAppend(ctx, user, session, msgs, stageReq{key: key, parent: parent, ifMatch: ifMatch, maxBytes: maxBytes})
	}
	args := make([]string, 0, 8+7*len(msgs))
	if ifMatch != nil {
		args = append(args, "1", *ifMatch)
	} else {
		args = append(args, "0", "")
	}
	args = append(args, parent.Mode, parent.ID, strconv.Itoa(s.cfg.MaxMessages), key,
		strconv.FormatInt(s.cfg.CompactAfterTokens, 10), strconv.Itoa(maxBytes))
	probe := s.mode == search.OnDemand && s.index != nil && s.index.WriteMode(user) == search.Probe
	left, deferred := SearchCallTerms, false
	for _, m := range msgs {
		args = append(args, m.ID, m.FP, strconv.FormatInt(m.Tokens, 10), string(m.Body))
		if probe {
			args = append(args, search.ProbeSpec, "") // no analysis: the user has no index, as far as the pod knows
			continue
		}
		a, later := s.batchSearchArgs(m, &left)
		args, deferred = append(args, a...), deferred || later
	}
	r, err := s.Run(ctx, luaScripts.Append, user, session, args...)
	if err != nil {
		return Stored{}, err
	}
	st, err := s.stored(luaScripts.Append.Name, r, user, session)
	s.deferred(st, err, deferred, user, session)
	return st, err
}

// SearchCallTerms bounds the terms one write script indexes, as
// IndexBatchTerms bounds a catch-up step (each term rewrites its postings
// in the session's index, at most 2 KiB): the messages of a batch
// past it are stored without their documents, which the catch-up the
// write queues then indexes.
const SearchCallTerms = IndexBatchTerms

// batchSearchArgs is searchArgs of message m of a batch within what is
// left of the batch's SearchCallTerms: past it (the first message always
// fits) m gets no document now (later true: the catch-up indexes it).
func (s *Store) batchSearchArgs(m message, left *int) (args []string, later bool) {
	if s.mode == search.Off {
		return s.searchArgs(m), false
	}
	d := search.Analyze(m.Text...)
	if n := len(d.Terms); n <= *left || *left == SearchCallTerms {
		*left -= n
		return []string{s.mode.Spec(d.Spec()), strconv.Itoa(d.Length)}, false
	}
	*left = 0
	return []string{s.mode.Spec(""), "0"}, true
}

// deferred queues the session's catch-up when a write that stored its
// messages left some of their documents to it.
func (s *Store) deferred(st Stored, err error, later bool, user, session string) {
	if err == nil && later && st.Created && s.index != nil {
		s.index.Touch(user, session)
	}
}

// stored decodes the answer of an append or put (lua/lib/reply.lua):
// {'ok', 'stored'|'started', message...} written ('started': it started
// the session), {'ok', 'replaced', message} a held message replaced,
// {'dup', message...} a retry (nothing written), else {'ok', status,
// detail} with nothing written (outcome). Written messages end with
// indexPending when the user has an index they were stored without: the
// pod then knows the user has one, and queues the session's catch-up.
func (s *Store) stored(script string, r lua.Reply, user, session string) (Stored, error) {
	var out Stored
	from := 0
	if !r.Dup {
		status, err := r.String(0)
		if err != nil {
			return Stored{}, redisstore.Wrap(script, err)
		}
		switch status {
		case "started":
			sessionstore.CountStarted()
			out.Created = true
		case "stored":
			out.Created = true
		case "replaced":
		default:
			return Stored{}, s.outcome(script, r, status, user, session)
		}
		from = 1
	}
	msgs, err := texts(r, from)
	if err != nil {
		return Stored{}, redisstore.Wrap(script, err)
	}
	if n := len(msgs); !r.Dup && n > 0 && string(msgs[n-1]) == indexPending {
		msgs = msgs[:n-1]
		if s.index != nil {
			s.index.Known(user)
			s.index.Touch(user, session)
		}
	}
	// a repeat's answer cut at its byte cap ends with 'truncated'
	if n := len(msgs); r.Dup && n > 0 && string(msgs[n-1]) == "truncated" {
		msgs, out.Cut = msgs[:n-1], true
	}
	out.Messages = msgs
	return out, nil
}

// texts are the values of r from value from on, each a string (a Redis
// nil, a message gone under another program's hands, is left out).
func texts(r lua.Reply, from int) ([][]byte, error) {
	out := make([][]byte, 0, max(len(r.Values)-from, 0))
	for i := from; i < len(r.Values); i++ {
		v, err := r.String(i)
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", i, err)
		}
		out = append(out, []byte(v))
	}
	return out, nil
}

// outcome is the error the client sees for an 'ok' answer {'ok', status,
// detail} that wrote nothing and whose answer is not a 409 of the script's
// own (reply.lua's 'refused'): a failed If-Match, a request naming what the
// session does not hold, a PATCH that lost a race.
func (s *Store) outcome(script string, r lua.Reply, status, user, session string) error {
	detail, err := r.String(1)
	if err != nil {
		return redisstore.Wrap(script, fmt.Errorf("status %s: %w", status, err))
	}
	switch status {
	case "leaf_moved":
		if detail == "" {
			detail = "none"
		}
		return redisstore.Refuse(redisstore.ErrPrecondition, "leaf_moved", "the latest leaf of session %s/%s is %s, not the one If-Match names; nothing was written", user, session, detail)
	case "unknown_parent":
		return sidecar.BadRequest("unknown_parent", "field \"parent_id\": session %s/%s has no message %s", user, session, detail)
	case "changed":
		return errChanged
	case "invalid_range":
		return sidecar.BadRequest("invalid_range", "from_id..to_id: %s", detail)
	case "splits_tool_call":
		return sidecar.BadRequest("splits_tool_call", "the range splits tool call %s from its result: take both or neither", detail)
	case "invalid_cursor":
		return sidecar.BadCursor("message %s is not on the path read (before/after must name a message of that path)", detail)
	}
	return redisstore.Wrap(script, errors.New("unexpected status "+status))
}

// missing turns a script's 'missing' (redisstore.ErrNotFound) into the
// refusal of no message id; other errors stay as they are.
func missing(err error, user, session, id string) error {
	if errors.Is(err, redisstore.ErrNotFound) {
		return redisstore.NotFound("session %s/%s has no message %s", user, session, id)
	}
	return err
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
	maxBytes, done, err := sidecar.ReserveAnswer(ctx, s.maxAnswer)
	if err != nil {
		return Page{}, err
	}
	size := 0
	defer func() { done(size) }()
	r, err := s.Run(ctx, luaScripts.Read, user, session, "path", q.Leaf, order, strconv.Itoa(q.Limit),
		q.Cursor, q.At, strconv.Itoa(q.Offset), strconv.Itoa(maxBytes), raw)
	if err != nil {
		return Page{}, missing(err, user, session, q.Leaf)
	}
	status, err := r.String(0)
	if err != nil {
		return Page{}, redisstore.Wrap(luaScripts.Read.Name, err)
	}
	if status != "page" {
		return Page{}, s.outcome(luaScripts.Read.Name, r, status, user, session)
	}
	var p Page
	var errs [5]error
	p.Total, errs[0] = r.Int(1)
	p.TotalTokens, errs[1] = r.Int(2)
	p.NextCursor, errs[2] = r.String(3)
	p.LatestTokens, errs[3] = r.Int(4)
	p.Cut, errs[4] = r.Flag(5)
	if err := errors.Join(errs[:]...); err != nil {
		return Page{}, redisstore.Wrap(luaScripts.Read.Name, err)
	}
	if p.Messages, err = texts(r, 6); err != nil {
		return Page{}, redisstore.Wrap(luaScripts.Read.Name, err)
	}
	for _, m := range p.Messages {
		size += len(m) + 1
	}
	return p, nil
}

// One reads message id (a not-found refusal when the session has none).
func (s *Store) One(ctx context.Context, user, session, id string) ([]byte, error) {
	r, err := s.Run(ctx, luaScripts.Read, user, session, "one", id)
	if err != nil {
		return nil, missing(err, user, session, id)
	}
	v, err := r.String(0)
	if err != nil {
		return nil, redisstore.Wrap(luaScripts.Read.Name, err)
	}
	return []byte(v), nil
}

// Children reads up to limit children of message id, oldest first, within
// the answer's byte cap (one child at least): cut says the cap left
// children out.
func (s *Store) Children(ctx context.Context, user, session, id string, limit int) (msgs [][]byte, cut bool, err error) {
	// the answer's bytes count against the host's in-flight byte budget,
	// which may cap it below SIDECAR_MAX_ANSWER_BYTES
	maxBytes, done, err := sidecar.ReserveAnswer(ctx, s.maxAnswer)
	if err != nil {
		return nil, false, err
	}
	size := 0
	defer func() { done(size) }()
	r, err := s.Run(ctx, luaScripts.Read, user, session, "children", id, strconv.Itoa(limit), strconv.Itoa(maxBytes))
	if err != nil {
		return nil, false, missing(err, user, session, id)
	}
	if cut, err = r.Flag(0); err != nil {
		return nil, false, redisstore.Wrap(luaScripts.Read.Name, err)
	}
	msgs, err = texts(r, 1)
	for _, m := range msgs {
		size += len(m) + 1
	}
	return msgs, cut, redisstore.Wrap(luaScripts.Read.Name, err)
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
	r, err := s.Run(ctx, luaScripts.Put, user, session, args...)
	if err != nil {
		return Stored{}, missing(err, user, session, m.ID)
	}
	return s.stored(luaScripts.Put.Name, r, user, session)
}

// Delete deletes message id (with its descendants when subtree); it
// returns how many messages went.
func (s *Store) Delete(ctx context.Context, user, session, id string, subtree bool) (int64, error) {
	flag := "0"
	if subtree {
		flag = "1"
	}
	n, err := s.count(ctx, luaScripts.Delete, user, session, id, flag)
	return n, missing(err, user, session, id)
}

// Clear removes every message of the session; it returns how many went.
func (s *Store) Clear(ctx context.Context, user, session string) (int64, error) {
	n, err := s.count(ctx, luaScripts.Clear, user, session)
	if errors.Is(err, redisstore.ErrNotFound) {
		return 0, redisstore.NotFound("no session %s/%s", user, session)
	}
	return n, err
}

// count runs a script answering {'ok', n}, 'missing' or a refusal.
func (s *Store) count(ctx context.Context, script *lua.Script, user, session string, args ...string) (int64, error) {
	r, err := s.Run(ctx, script, user, session, args...)
	if err != nil {
		return 0, err
	}
	n, err := r.Int(0)
	if err != nil {
		return 0, redisstore.Wrap(script.Name, err)
	}
	return n, nil
}

// Pop removes the latest leaf and returns it.
func (s *Store) Pop(ctx context.Context, user, session string) ([]byte, error) {
	r, err := s.Run(ctx, luaScripts.Pop, user, session)
	if errors.Is(err, redisstore.ErrNotFound) {
		return nil, redisstore.NotFound("session %s/%s has no messages", user, session)
	}
	if err != nil {
		return nil, err
	}
	v, err := r.String(0)
	if err != nil {
		return nil, redisstore.Wrap(luaScripts.Pop.Name, err)
	}
	return []byte(v), nil
}

// searchArgs are m's search arguments for a script: none when
// SEARCH_INDEX is off; under on-demand its spec says "only while the user
// has an index" (search.Mode.Spec).
func (s *Store) searchArgs(m message) []string {
	if s.mode == search.Off {
		return []string{"", "0"}
	}
	a := m.searchArgs()
	a[0] = s.mode.Spec(a[0])
	return a
}
