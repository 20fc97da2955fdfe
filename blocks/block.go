package blocks

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/tokens"
)

// The scopes of a block: a user's blocks apply to every session of the
// user; a session's override the user's of the same label.
const (
	scopeUser    = "user"
	scopeSession = "session"
)

// Limits of a block's fields (the counts and sizes are settings: Config).
const (
	MaxDescription = 1024          // code points
	MaxTokensLimit = 10_000_000    // the largest max_tokens
	MaxPosition    = 1_000_000_000 // |position|
)

// Block is a block as clients read it.
type Block struct {
	Label       string  `json:"label"`
	Scope       string  `json:"scope"`
	Description *string `json:"description"`
	Content     string  `json:"content"`
	MaxTokens   *int    `json:"max_tokens"`
	Writable    bool    `json:"writable"`
	Position    int     `json:"position"`
	Tokens      int     `json:"tokens"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`

	created int64 // µs, for the order
}

// stored is a block as the scripts keep it (blocks.lua): Counts is
// "<bytes>,<chars>,<words>,<lead>,<trail>" of the content; the times (µs)
// are added by the scripts.
type stored struct {
	Label       string  `json:"label"`
	Description *string `json:"description"`
	Content     string  `json:"content"`
	MaxTokens   *int    `json:"max_tokens"`
	Writable    bool    `json:"writable"`
	Position    int     `json:"position"`
	Tokens      int     `json:"tokens"`
	Counts      string  `json:"counts"`
	CreatedAt   int64   `json:"created_at,omitempty"`
	UpdatedAt   int64   `json:"updated_at,omitempty"`
}

func formatCounts(c tokens.Counts) string {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	return itoa(c.Bytes) + "," + itoa(c.Chars) + "," + itoa(c.Words) + "," + itoa(b(c.Lead)) + "," + itoa(b(c.Trail))
}

func isoTime(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339Nano) }

// decodeBlock turns a stored block of scope into its answer.
func decodeBlock(raw, scope string) (Block, error) {
	var s stored
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return Block{}, err
	}
	return Block{
		Label: s.Label, Scope: scope, Description: s.Description, Content: s.Content, MaxTokens: s.MaxTokens,
		Writable: s.Writable, Position: s.Position, Tokens: s.Tokens,
		CreatedAt: isoTime(s.CreatedAt), UpdatedAt: isoTime(s.UpdatedAt), created: s.CreatedAt,
	}, nil
}

// sortBlocks orders blocks as the prompt renders them: by position, then
// creation, then label.
func sortBlocks(bs []Block) {
	slices.SortStableFunc(bs, func(a, b Block) int {
		return cmp.Or(cmp.Compare(a.Position, b.Position), cmp.Compare(a.created, b.created), strings.Compare(a.Label, b.Label))
	})
}

// label returns the {label} path value, lower-cased, or a 400.
func label(r *http.Request) (string, error) {
	l, err := sidecar.PathID(r, "label")
	if err != nil {
		return "", err
	}
	return strings.ToLower(l), nil
}

// putRequest is the body of PUT .../blocks/{label}.
type putRequest struct {
	Content     *string `json:"content"`
	Description *string `json:"description"`
	MaxTokens   *int    `json:"max_tokens"`
	Writable    *bool   `json:"writable"`
	Position    *int    `json:"position"`
}

// block validates a PUT body for label and builds the stored block.
func (m *Module) block(label string, req putRequest) (stored, error) {
	if req.Content == nil {
		return stored{}, sidecar.BadRequest("invalid_field", "field \"content\" is required (a string, may be empty)")
	}
	if err := m.checkContent("content", *req.Content); err != nil {
		return stored{}, err
	}
	s := stored{Label: label, Content: *req.Content, Writable: true}
	if d := req.Description; d != nil && *d != "" {
		if n := utf8.RuneCountInString(*d); n > MaxDescription {
			return stored{}, sidecar.BadRequest("invalid_field", "field \"description\" is %d characters; at most %d", n, MaxDescription)
		}
		s.Description = d
	}
	if mt := req.MaxTokens; mt != nil {
		if *mt < 1 || *mt > MaxTokensLimit {
			return stored{}, sidecar.BadRequest("invalid_field", "field \"max_tokens\" must be from 1 to %d, not %d", MaxTokensLimit, *mt)
		}
		s.MaxTokens = mt
	}
	if req.Writable != nil {
		s.Writable = *req.Writable
	}
	if p := req.Position; p != nil {
		if *p < -MaxPosition || *p > MaxPosition {
			return stored{}, sidecar.BadRequest("invalid_field", "field \"position\" must be from %d to %d, not %d", -MaxPosition, MaxPosition, *p)
		}
		s.Position = *p
	}
	c := tokens.Count(s.Content)
	s.Tokens, s.Counts = c.Tokens(), formatCounts(c)
	if s.MaxTokens != nil && s.Tokens > *s.MaxTokens {
		return stored{}, sidecar.Conflict("block_full", "block %q: the content is %d tokens, over its max_tokens %d; nothing was written", label, s.Tokens, *s.MaxTokens)
	}
	return s, nil
}

// checkContent refuses content (of the named field) over the size setting.
func (m *Module) checkContent(field, content string) error {
	if len(content) > m.cfg.MaxContentBytes {
		return sidecar.BadRequest("invalid_field", "field %q is %d bytes; a block holds at most %d (BLOCKS_MAX_CONTENT_BYTES)", field, len(content), m.cfg.MaxContentBytes)
	}
	return nil
}

// ids returns the user and, for a session route, the session of r.
func ids(r *http.Request, scope string) (user, session string, err error) {
	if scope == scopeUser {
		user, err = sidecar.PathID(r, "user_id")
		return user, "", err
	}
	return sidecar.SessionIDs(r)
}

// blockAt is the user, the session (of a session route) and the label a
// block route names.
func blockAt(r *http.Request, scope string) (user, session, l string, err error) {
	if user, session, err = ids(r, scope); err != nil {
		return "", "", "", err
	}
	l, err = label(r)
	return user, session, l, err
}

// blockBody is blockAt and the request's JSON body, decoded into a T.
func blockBody[T any](r *http.Request, scope string) (user, session, l string, req T, err error) {
	if user, session, l, err = blockAt(r, scope); err == nil {
		err = sidecar.DecodeJSON(r, &req)
	}
	return user, session, l, req, err
}

func (m *Module) put(scope string) sidecar.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		user, session, l, req, err := blockBody[putRequest](r, scope)
		if err != nil {
			return err
		}
		s, err := m.block(l, req)
		if err != nil {
			return err
		}
		b, created, err := m.store.Put(r.Context(), user, session, scope, s)
		if err != nil {
			return err
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		sidecar.WriteJSON(w, status, b)
		return nil
	}
}

type appendRequest struct {
	Content *string `json:"content"`
}

func (m *Module) appendTo(scope string) sidecar.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		user, session, l, req, err := blockBody[appendRequest](r, scope)
		if err != nil {
			return err
		}
		if req.Content == nil {
			return sidecar.BadRequest("invalid_field", "field \"content\" is required (the text to append)")
		}
		if err := m.checkContent("content", *req.Content); err != nil {
			return err
		}
		// no such block, or one that does not take the content, is Set's refusal
		res, err := m.store.Set(r.Context(), user, session, setCall{scope: scope, label: l, action: actionAppend, content: *req.Content})
		if err != nil {
			return err
		}
		sidecar.WriteJSON(w, http.StatusOK, res.block)
		return nil
	}
}

func (m *Module) get(scope string) sidecar.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		user, session, l, err := blockAt(r, scope)
		if err != nil {
			return err
		}
		b, err := m.store.Get(r.Context(), user, session, l)
		if err != nil {
			return err
		}
		sidecar.WriteJSON(w, http.StatusOK, b)
		return nil
	}
}

type listJSON struct {
	Blocks []Block `json:"blocks"`
}

func (m *Module) list(scope string) sidecar.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		user, session, err := ids(r, scope)
		if err != nil {
			return err
		}
		v, err := m.store.Read(r.Context(), user, session, false)
		if err != nil {
			return err
		}
		sidecar.WriteJSON(w, http.StatusOK, listJSON{Blocks: v.blocks})
		return nil
	}
}

func (m *Module) delete(scope string) sidecar.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		user, session, l, err := blockAt(r, scope)
		if err != nil {
			return err
		}
		if err := m.store.Delete(r.Context(), user, session, scope, l); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}
