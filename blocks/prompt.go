package blocks

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/tokens"
)

// bar is the line above and below each block's header.
var bar = strings.Repeat("═", 46)

// Render is the system prompt of blocks (in prompt order), as Cloudflare's
// agents render context blocks: per block with content, a line of 46 ═,
// the header (the label upper-cased, " (description)" when there is one,
// " [<pct>% — <tokens>/<max> tokens]" when max_tokens is set, pct rounded
// half up, " [readonly]" when not writable), a line of 46 ═, then the
// content; blocks joined by one "\n", no newline at the end.
func Render(blocks []Block) string {
	var parts []string
	for _, b := range blocks {
		if b.Content == "" {
			continue
		}
		var h strings.Builder
		h.WriteString(strings.ToUpper(b.Label))
		if b.Description != nil && *b.Description != "" {
			h.WriteString(" (" + *b.Description + ")")
		}
		if b.MaxTokens != nil {
			most := *b.MaxTokens
			pct := (200*b.Tokens + most) / (2 * most) // round(100 × tokens / max), halves up
			h.WriteString(" [" + strconv.Itoa(pct) + "% — " + strconv.Itoa(b.Tokens) + "/" + strconv.Itoa(most) + " tokens]")
		}
		if !b.Writable {
			h.WriteString(" [readonly]")
		}
		parts = append(parts, bar+"\n"+h.String()+"\n"+bar+"\n"+b.Content)
	}
	return strings.Join(parts, "\n")
}

// promptJSON is the ?format=json answer.
type promptJSON struct {
	Prompt   string  `json:"prompt"`
	Tokens   int     `json:"tokens"`
	FrozenAt *string `json:"frozen_at"`
}

// freezeTries bounds the renderings a freeze makes while blocks keep
// changing under it.
const freezeTries = 8

// promptFormat reads ?format: text (default) or json.
func promptFormat(r *http.Request) (json bool, err error) {
	switch r.URL.Query().Get("format") {
	case "", "text":
		return false, nil
	case "json":
		return true, nil
	}
	return false, sidecar.BadRequest("invalid_query", "format must be text or json")
}

// promptRequest is the session a prompt route names and its format.
func promptRequest(r *http.Request) (user, session string, asJSON bool, err error) {
	if user, session, err = sidecar.SessionIDs(r); err != nil {
		return "", "", false, err
	}
	asJSON, err = promptFormat(r)
	return user, session, asJSON, err
}

func (m *Module) systemPrompt(w http.ResponseWriter, r *http.Request) error {
	user, session, asJSON, err := promptRequest(r)
	if err != nil {
		return err
	}
	var wantFrozen bool
	switch r.URL.Query().Get("frozen") {
	case "", "false":
	case "true":
		wantFrozen = true
	default:
		return sidecar.BadRequest("invalid_query", "frozen must be true or false")
	}
	f, err := m.prompt(r, user, session, wantFrozen)
	if err != nil {
		return err
	}
	writePrompt(w, asJSON, f)
	return nil
}

// prompt is the session's system prompt: rendered now, or (wantFrozen)
// the one frozen at the first such call, frozen now when none is.
func (m *Module) prompt(r *http.Request, user, session string, wantFrozen bool) (frozen, error) {
	if !wantFrozen {
		v, err := m.store.Read(r.Context(), user, session, false)
		if err != nil {
			return frozen{}, err
		}
		p := Render(v.blocks)
		return frozen{prompt: p, tokens: tokens.Estimate(p)}, nil
	}
	f, ok, err := m.store.Frozen(r.Context(), user, session)
	if err != nil || ok {
		return f, err
	}
	return m.freeze(r, user, session, "freeze")
}

func (m *Module) refreshPrompt(w http.ResponseWriter, r *http.Request) error {
	user, session, asJSON, err := promptRequest(r)
	if err != nil {
		return err
	}
	f, err := m.freeze(r, user, session, "refresh")
	if err != nil {
		return err
	}
	writePrompt(w, asJSON, f)
	return nil
}

// freeze renders the blocks and stores the prompt (mode "freeze" or
// "refresh"), again while the blocks change between the read and the store.
func (m *Module) freeze(r *http.Request, user, session, mode string) (frozen, error) {
	for range freezeTries {
		v, err := m.store.Read(r.Context(), user, session, true)
		if err != nil {
			return frozen{}, err
		}
		p := Render(v.blocks)
		f, err := m.store.Freeze(r.Context(), user, session, mode, v.digest, p, tokens.Estimate(p))
		if !errors.Is(err, errChanged) {
			return f, err
		}
	}
	return frozen{}, redisstore.Refuse(redisstore.ErrConflict, "blocks_busy",
		"the blocks changed during each of %d renderings; nothing was frozen: retry", freezeTries)
}

// writePrompt answers the prompt as text/plain (its exact bytes) or JSON.
func writePrompt(w http.ResponseWriter, asJSON bool, f frozen) {
	if asJSON {
		out := promptJSON{Prompt: f.prompt, Tokens: f.tokens}
		if f.at != 0 {
			at := isoTime(f.at)
			out.FrozenAt = &at
		}
		sidecar.WriteJSON(w, http.StatusOK, out)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(f.prompt)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(f.prompt))
}
