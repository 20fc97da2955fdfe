package blocks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/tokens"
)

// Store is the module's reads and writes over the shared session runner,
// each write one script (blocks_*.lua).
type Store struct {
	*sessionstore.Store
	cfg  Config
	mode search.Mode // SEARCH_INDEX
}

// userSession is the session id a user-scope script runs with: only its
// keys' tag (the user's slot) is used; nothing of that session is written.
const userSession = "-"

func sessionArg(session string) string {
	if session == "" {
		return userSession
	}
	return session
}

func itoa(n int) string { return strconv.Itoa(n) }

func (s *Store) layout() redisstore.Layout { return redisstore.Layout{Cluster: s.Conn().Cluster()} }

// Put creates or replaces block b of scope (session "" for a user block);
// created is false for a replace.
func (s *Store) Put(ctx context.Context, user, session, scope string, b stored) (Block, bool, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return Block{}, false, err
	}
	most := s.cfg.MaxPerUser
	if scope == scopeSession {
		most = s.cfg.MaxPerSession
	}
	// a full scope is the script's too_many_blocks refusal (409)
	r, err := s.Run(ctx, luaScripts.Put, user, sessionArg(session), scope, b.Label, string(raw), itoa(most))
	if err != nil {
		return Block{}, false, err
	}
	stored, err1 := r.String(0)
	created, err2 := r.Flag(1)
	started, err3 := r.Flag(2)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Block{}, false, redisstore.Wrap(luaScripts.Put.Name, err)
	}
	if started {
		sessionstore.CountStarted()
	}
	out, err := decodeBlock(stored, scope)
	if err != nil {
		return Block{}, false, fmt.Errorf("put block %s: %w", b.Label, err)
	}
	return out, created, nil
}

// The actions of an append-or-replace.
const (
	actionAppend  = "append"
	actionReplace = "replace"
)

// setCall is an append or replace of an existing block's content.
type setCall struct {
	scope      string // scopeSession: the session's block, else the user's; scopeUser: the user's only
	label      string
	action     string
	content    string
	tool       bool   // a tool call: a read-only block is refused
	toolCallID string // "" for none
}

// The outcomes of blocks_set: written (or a repeated tool call), else,
// for a tool call, the API code of the refusal it answers any other
// caller with (nothing written).
const (
	setWritten      = "written"
	setFull         = "block_full"
	setReadOnly     = "block_readonly"
	setTooLarge     = "block_too_large"
	setInvalidBlock = "stored_value_invalid"
)

// setResult is what blocks_set answered.
type setResult struct {
	code    string // setWritten (also for a repeated tool call), or a tool call's set* refusal
	block   Block  // the block written (not for a repeated tool call)
	outcome string // setWritten: "<label>\t<action>\t<scope>\t<tokens>\t<max>"
	n, most int64  // setFull: the tokens it would take and max_tokens; setTooLarge: bytes and the setting
}

// Set appends to or replaces the content of an existing block in one
// script. No such block is a not-found refusal; what the block does not
// take is, for a tool call, a setResult with its code (nothing written),
// else the script's refusal (409).
func (s *Store) Set(ctx context.Context, user, session string, c setCall) (setResult, error) {
	piece, err := json.Marshal(c.content)
	if err != nil {
		return setResult{}, err
	}
	tool := "0"
	if c.tool {
		tool = "1"
	}
	r, err := s.Run(ctx, luaScripts.Set, user, sessionArg(session), c.scope, c.label, c.action, string(piece),
		formatCounts(tokens.Count(c.content)), tool, c.toolCallID, itoa(s.cfg.MaxContentBytes))
	if errors.Is(err, redisstore.ErrNotFound) {
		return setResult{}, redisstore.NotFound("no block %q", c.label)
	}
	if err != nil {
		return setResult{}, err
	}
	bad := func(err error) error { return redisstore.Wrap(luaScripts.Set.Name, err) }
	if r.Dup { // a repeated tool call: its first outcome
		outcome, err := r.String(0)
		if err != nil {
			return setResult{}, bad(err)
		}
		return setResult{code: setWritten, outcome: outcome}, nil
	}
	var out setResult
	if out.code, err = r.String(0); err != nil {
		return setResult{}, bad(err)
	}
	if out.code != setWritten && !c.tool {
		return setResult{}, bad(fmt.Errorf("outcome %q of a call that is no tool call", out.code))
	}
	switch out.code {
	case setWritten:
		raw, err1 := r.String(1)
		scope, err2 := r.String(2)
		started, err3 := r.Flag(3)
		outcome, err4 := r.String(4)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return setResult{}, bad(err)
		}
		if out.block, err = decodeBlock(raw, scope); err != nil {
			return setResult{}, fmt.Errorf("set block %s: %w", c.label, err)
		}
		if started {
			sessionstore.CountStarted()
		}
		out.outcome = outcome
	case setFull, setTooLarge:
		n, err1 := r.Int(1)
		most, err2 := r.Int(2)
		if err := errors.Join(err1, err2); err != nil {
			return setResult{}, bad(err)
		}
		out.n, out.most = n, most
	case setReadOnly, setInvalidBlock:
	default:
		return setResult{}, bad(fmt.Errorf("unknown outcome %q", out.code))
	}
	return out, nil
}

// Delete removes the block of scope (on a session path the session's only).
func (s *Store) Delete(ctx context.Context, user, session, scope, label string) error {
	_, err := s.Run(ctx, luaScripts.Delete, user, sessionArg(session), scope, label)
	if errors.Is(err, redisstore.ErrNotFound) {
		return redisstore.NotFound("no %s block %q", scope, label)
	}
	return err
}

// view is the blocks a prompt is rendered from, read at one instant.
type view struct {
	blocks []Block // merged (a session block overrides the user's), in prompt order
	digest string  // of the stored blocks, for blocks_freeze (when asked for)
	// searchable: the user has sessions session_search can search (set by
	// offers)
	searchable bool
}

// Read reads the user's blocks and, with a session, the session's, merged;
// withDigest adds their digest (for Freeze).
func (s *Store) Read(ctx context.Context, user, session string, withDigest bool) (view, error) {
	withSession, digest := "0", "0"
	if session != "" {
		withSession = "1"
	}
	if withDigest {
		digest = "1"
	}
	r, err := s.Run(ctx, luaScripts.Read, user, sessionArg(session), withSession, digest)
	if err != nil {
		return view{}, err
	}
	if len(r.Values) != 3 {
		return view{}, redisstore.Wrap(luaScripts.Read.Name, fmt.Errorf("reply has %d values, want 3", len(r.Values)))
	}
	merged := map[string]Block{}
	for i, scope := range []string{scopeUser, scopeSession} {
		flat, err := r.Values[i].AsStrSlice()
		if err != nil {
			return view{}, redisstore.Wrap(luaScripts.Read.Name, err)
		}
		for j := 0; j+1 < len(flat); j += 2 {
			b, err := decodeBlock(flat[j+1], scope)
			if err != nil {
				return view{}, redisstore.Refuse(redisstore.ErrConflict, "stored_value_invalid",
					"block %q of the %s holds a value the sidecar did not write (another program wrote it)", flat[j], scope)
			}
			merged[flat[j]] = b
		}
	}
	v := view{blocks: make([]Block, 0, len(merged))}
	for _, b := range merged {
		v.blocks = append(v.blocks, b)
	}
	sortBlocks(v.blocks)
	if v.digest, err = r.String(2); err != nil {
		return view{}, redisstore.Wrap(luaScripts.Read.Name, err)
	}
	return v, nil
}

// Get reads one block: for a session the session's, else the user's.
func (s *Store) Get(ctx context.Context, user, session, label string) (Block, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return Block{}, err
	}
	l := s.layout()
	keys := []string{l.UserKey(UserBlocksFamily, user)}
	if session != "" {
		keys = append(keys, l.SessionKey(SessionBlocksFamily, user, session))
	}
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = client.B().Hget().Key(k).Field(label).Build()
	}
	res := client.DoMulti(ctx, cmds...)
	for i := len(res) - 1; i >= 0; i-- {
		raw, err := res[i].ToString()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return Block{}, readErr("get block", keys[i], err)
		}
		scope := scopeUser
		if i == 1 {
			scope = scopeSession
		}
		b, err := decodeBlock(raw, scope)
		if err != nil {
			return Block{}, redisstore.Refuse(redisstore.ErrConflict, "stored_value_invalid",
				"block %q holds a value the sidecar did not write (another program wrote it)", label)
		}
		return b, nil
	}
	return Block{}, redisstore.NotFound("no block %q", label)
}

// readErr is the error of a read of key: a key of another type (another
// program wrote it) is the 409 key_wrong_type every script answers, any
// other error Redis's.
func readErr(op, key string, err error) error {
	if ref := redisstore.AsWrongType(err,
		"Redis key %s holds another type of value than the hash the sidecar keeps there (another program wrote it); nothing was changed: delete or rename that key", key); ref != nil {
		return ref
	}
	return redisstore.Wrap(op, err)
}

// frozen is a session's frozen system prompt.
type frozen struct {
	prompt string
	tokens int
	at     int64 // µs
}

// Frozen reads the session's frozen prompt; ok false when none is frozen.
func (s *Store) Frozen(ctx context.Context, user, session string) (f frozen, ok bool, err error) {
	client, err := s.Conn().Client()
	if err != nil {
		return frozen{}, false, err
	}
	key := s.layout().SessionKey(PromptFamily, user, session)
	v, err := client.Do(ctx, client.B().Hmget().Key(key).Field("prompt", "tokens", "frozen_at").Build()).ToArray()
	if err != nil {
		return frozen{}, false, readErr("frozen prompt", key, err)
	}
	return parseFrozen(v)
}

func parseFrozen(v []rueidis.RedisMessage) (frozen, bool, error) {
	if len(v) < 3 {
		return frozen{}, false, nil
	}
	p, err := v[0].ToString()
	if rueidis.IsRedisNil(err) {
		return frozen{}, false, nil
	}
	n, err1 := v[1].AsInt64()
	at, err2 := v[2].AsInt64()
	if err != nil || err1 != nil || err2 != nil {
		return frozen{}, false, nil
	}
	return frozen{prompt: p, tokens: int(n), at: at}, true, nil
}

// errChanged: the blocks changed between the read and the freeze.
var errChanged = errors.New("blocks changed")

// Freeze stores prompt (rendered from the read with digest) as the
// session's frozen prompt: mode "freeze" keeps a prompt frozen before (and
// returns it), "refresh" replaces it. errChanged when the blocks changed
// since the read (nothing written).
func (s *Store) Freeze(ctx context.Context, user, session, mode, digest, prompt string, n int) (frozen, error) {
	r, err := s.Run(ctx, luaScripts.Freeze, user, session, mode, digest, prompt, itoa(n))
	if err != nil {
		return frozen{}, err
	}
	bad := func(err error) error { return redisstore.Wrap(luaScripts.Freeze.Name, err) }
	at := 0 // where the prompt's values start: {'dup', prompt, ...}, {'ok', 'stored', prompt, ...}
	if !r.Dup {
		status, err := r.String(0)
		if err != nil {
			return frozen{}, bad(err)
		}
		switch status {
		case "changed":
			return frozen{}, errChanged
		case "stored":
		default:
			return frozen{}, bad(fmt.Errorf("unknown status %q", status))
		}
		at = 1
	}
	p, err1 := r.String(at)
	toks, err2 := r.Int(at + 1)
	frozenAt, err3 := r.Int(at + 2)
	if err := errors.Join(err1, err2, err3); err != nil {
		return frozen{}, bad(err)
	}
	if !r.Dup {
		started, err := r.Flag(at + 3)
		if err != nil {
			return frozen{}, bad(err)
		}
		if started {
			sessionstore.CountStarted()
		}
	}
	return frozen{prompt: p, tokens: int(toks), at: frozenAt}, nil
}
