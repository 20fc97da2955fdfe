package blocks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/tokens"
)

// Store is the module's reads and writes over the shared session runner,
// each write one script (lua/blocks_*.lua).
type Store struct {
	*sessionstore.Store
	cfg Config
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
	most, setting, owner := s.cfg.MaxPerUser, "BLOCKS_MAX_PER_USER", "user "+user
	if scope == scopeSession {
		most, setting, owner = s.cfg.MaxPerSession, "BLOCKS_MAX_PER_SESSION", "session "+user+"/"+session
	}
	msg, err := s.Exec(ctx, lua.BlocksPut, user, sessionArg(session), scope, b.Label, string(raw), itoa(most))
	if err != nil {
		return Block{}, false, err
	}
	arr, err := msg.ToArray()
	if err != nil || len(arr) == 0 {
		return Block{}, false, redisstore.Wrap(lua.BlocksPut.Name, errors.Join(err, errors.New("unexpected reply")))
	}
	code, _ := arr[0].AsInt64()
	if code == -1 {
		return Block{}, false, redisstore.Refuse(redisstore.ErrConflict, "too_many_blocks",
			"%s has %d blocks, the most allowed (%s); delete one first; nothing was written", owner, most, setting)
	}
	if len(arr) != 3 {
		return Block{}, false, redisstore.Wrap(lua.BlocksPut.Name, errors.New("unexpected reply"))
	}
	if started, _ := arr[2].AsInt64(); started == 1 {
		sessionstore.CountStarted()
	}
	stored, _ := arr[1].ToString()
	out, err := decodeBlock(stored, scope)
	if err != nil {
		return Block{}, false, fmt.Errorf("put block %s: %w", b.Label, err)
	}
	return out, code == 1, nil
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

// setResult is what blocks_set answered.
type setResult struct {
	code    int64 // 1 written, 2 a repeated tool call, 0 no block, -1 full, -2 read-only, -3 too large, -4 not a block
	block   Block
	outcome string // "<label>\t<action>\t<scope>\t<tokens>\t<max>"
	n, most int64  // -1: the tokens it would take and max_tokens; -3: bytes and the setting
}

// Set appends to or replaces the content of an existing block in one
// script (nothing written unless code is 1).
func (s *Store) Set(ctx context.Context, user, session string, c setCall) (setResult, error) {
	piece, err := json.Marshal(c.content)
	if err != nil {
		return setResult{}, err
	}
	tool := "0"
	if c.tool {
		tool = "1"
	}
	msg, err := s.Exec(ctx, lua.BlocksSet, user, sessionArg(session), c.scope, c.label, c.action, string(piece),
		formatCounts(tokens.Count(c.content)), tool, c.toolCallID, itoa(s.cfg.MaxContentBytes))
	if err != nil {
		return setResult{}, err
	}
	arr, err := msg.ToArray()
	if err != nil || len(arr) == 0 {
		return setResult{}, redisstore.Wrap(lua.BlocksSet.Name, errors.Join(err, errors.New("unexpected reply")))
	}
	var out setResult
	out.code, _ = arr[0].AsInt64()
	switch {
	case out.code == 1 && len(arr) == 5:
		raw, _ := arr[1].ToString()
		scope, _ := arr[2].ToString()
		if out.block, err = decodeBlock(raw, scope); err != nil {
			return setResult{}, fmt.Errorf("set block %s: %w", c.label, err)
		}
		if started, _ := arr[3].AsInt64(); started == 1 {
			sessionstore.CountStarted()
		}
		out.outcome, _ = arr[4].ToString()
	case out.code == 2 && len(arr) == 2:
		out.outcome, _ = arr[1].ToString()
	case (out.code == -1 || out.code == -3) && len(arr) == 3:
		out.n, _ = arr[1].AsInt64()
		out.most, _ = arr[2].AsInt64()
	}
	return out, nil
}

// refusal is the API's answer to a set that wrote nothing (nil when it wrote).
func (r setResult) refusal(label string) error {
	switch r.code {
	case 1, 2:
		return nil
	case 0:
		return redisstore.NotFound("no block %q", label)
	case -1:
		return redisstore.Refuse(redisstore.ErrConflict, "block_full",
			"block %q: the content would be %d tokens, over its max_tokens %d; nothing was written", label, r.n, r.most)
	case -2:
		return redisstore.Refuse(redisstore.ErrConflict, "block_readonly", "block %q is read-only; nothing was written", label)
	case -3:
		return redisstore.Refuse(redisstore.ErrConflict, "block_too_large",
			"block %q: the content would be %d bytes, over BLOCKS_MAX_CONTENT_BYTES %d; nothing was written", label, r.n, r.most)
	}
	return redisstore.Refuse(redisstore.ErrConflict, "stored_value_invalid",
		"block %q holds a value the sidecar did not write (another program wrote it); nothing was changed", label)
}

// Delete removes the block of scope (on a session path the session's only).
func (s *Store) Delete(ctx context.Context, user, session, scope, label string) error {
	msg, err := s.Exec(ctx, lua.BlocksDelete, user, sessionArg(session), scope, label)
	if err != nil {
		return err
	}
	n, err := msg.AsInt64()
	if err != nil {
		return redisstore.Wrap(lua.BlocksDelete.Name, err)
	}
	if n == 0 {
		return redisstore.NotFound("no %s block %q", scope, label)
	}
	return nil
}

// view is the blocks a prompt is rendered from, read at one instant.
type view struct {
	blocks []Block // merged (a session block overrides the user's), in prompt order
	digest string  // of the stored blocks, for blocks_freeze (when asked for)
	// searchable: the user has messages in the relevance index (set by
	// listTools, for session_search)
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
	msg, err := s.Exec(ctx, lua.BlocksRead, user, sessionArg(session), withSession, digest)
	if err != nil {
		return view{}, err
	}
	arr, err := msg.ToArray()
	if err != nil || len(arr) != 3 {
		return view{}, redisstore.Wrap(lua.BlocksRead.Name, errors.Join(err, errors.New("unexpected reply")))
	}
	merged := map[string]Block{}
	for i, scope := range []string{scopeUser, scopeSession} {
		flat, err := arr[i].AsStrSlice()
		if err != nil {
			return view{}, redisstore.Wrap(lua.BlocksRead.Name, err)
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
	v.digest, _ = arr[2].ToString()
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
	if re, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(re.Error(), "WRONGTYPE") {
		return redisstore.Refuse(redisstore.ErrConflict, "key_wrong_type",
			"Redis key %s holds another type of value than the hash the sidecar keeps there (another program wrote it); nothing was changed: delete or rename that key", key)
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
	msg, err := s.Exec(ctx, lua.BlocksFreeze, user, session, mode, digest, prompt, itoa(n))
	if err != nil {
		return frozen{}, err
	}
	arr, err := msg.ToArray()
	if err != nil || len(arr) == 0 {
		return frozen{}, redisstore.Wrap(lua.BlocksFreeze.Name, errors.Join(err, errors.New("unexpected reply")))
	}
	code, _ := arr[0].AsInt64()
	if code == -2 {
		return frozen{}, errChanged
	}
	if len(arr) < 4 {
		return frozen{}, redisstore.Wrap(lua.BlocksFreeze.Name, errors.New("unexpected reply"))
	}
	if code == 1 && len(arr) == 5 {
		if started, _ := arr[4].AsInt64(); started == 1 {
			sessionstore.CountStarted()
		}
	}
	f, ok, _ := parseFrozen(arr[1:4])
	if !ok {
		return frozen{}, redisstore.Wrap(lua.BlocksFreeze.Name, errors.New("unexpected reply"))
	}
	return f, nil
}
