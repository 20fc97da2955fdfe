package messages

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentsidecar/agentsidecar/sidecar"
)

// patchRetries bounds the tries of a PATCH whose message keeps changing
// between its read and its write (each try is one read and one script).
const patchRetries = 5

func (m *Module) putMessage(w http.ResponseWriter, r *http.Request) error {
	ids, err := sidecar.PathIDs(r, "user_id", "session_id", "message_id")
	if err != nil {
		return err
	}
	var in messageIn
	if err := sidecar.DecodeJSONLax(r, &in, inItem); err != nil {
		return err
	}
	if in.ID != nil && *in.ID != ids[2] {
		return sidecar.BadRequest("invalid_field", "field \"id\" is %q but the path names %q; send the path's id or none", *in.ID, ids[2])
	}
	in.ID = &ids[2]
	msg, err := in.check("", m.limits.MaxItemBytes)
	if err != nil {
		return err
	}
	parent, err := in.parent("parent_id")
	if err != nil {
		return err
	}
	st, err := m.store.Put(r.Context(), ids[0], ids[1], msg, parent, nil, false)
	if err != nil {
		return err
	}
	sidecar.WriteBody(w, m.writeStatus(w, st), st.Messages[0])
	return nil
}

// patchIn is a PATCH body: the fields it replaces (null removes one).
type patchIn struct {
	Content    json.RawMessage `json:"content"`
	Parts      json.RawMessage `json:"parts"`
	Item       json.RawMessage `json:"item"`
	Format     json.RawMessage `json:"format"`
	Metadata   json.RawMessage `json:"metadata"`
	TokenCount json.RawMessage `json:"token_count"`
}

// stored is a stored message read back for a PATCH.
type stored struct {
	messageIn
	CreatedAt json.RawMessage `json:"created_at"`
	Tokens    json.RawMessage `json:"tokens"`
}

func (m *Module) patchMessage(w http.ResponseWriter, r *http.Request) error {
	ids, err := sidecar.PathIDs(r, "user_id", "session_id", "message_id")
	if err != nil {
		return err
	}
	var p patchIn
	if err := sidecar.DecodeJSONLax(r, &p, inItem); err != nil {
		return err
	}
	for try := 0; ; try++ {
		old, err := m.store.One(r.Context(), ids[0], ids[1], ids[2])
		if err != nil {
			return err
		}
		var cur stored
		if err := json.Unmarshal(old, &cur); err != nil {
			return err
		}
		in := cur.messageIn
		if err := p.apply(&in); err != nil {
			return err
		}
		msg, err := in.check("", m.limits.MaxItemBytes)
		if err != nil {
			return err
		}
		st, err := m.store.Put(r.Context(), ids[0], ids[1], msg, parentRef{Mode: "latest"}, old, true)
		if errors.Is(err, errChanged) && try < patchRetries {
			continue
		}
		if err != nil {
			return err
		}
		sidecar.WriteBody(w, http.StatusOK, st.Messages[0])
		return nil
	}
}

// apply sets the fields p names on in (null: removed).
func (p *patchIn) apply(in *messageIn) error {
	set := func(dst *json.RawMessage, v json.RawMessage) {
		if v == nil {
			return
		}
		if present(v) {
			*dst = v
		} else {
			*dst = nil
		}
	}
	set(&in.Content, p.Content)
	set(&in.Parts, p.Parts)
	set(&in.Item, p.Item)
	set(&in.Metadata, p.Metadata)
	if p.Format != nil {
		in.Format = nil
		if present(p.Format) {
			var f string
			if json.Unmarshal(p.Format, &f) != nil {
				return bad("format", "must be a string or null")
			}
			in.Format = &f
		}
	}
	if p.TokenCount != nil {
		in.TokenCount = nil
		if present(p.TokenCount) {
			var n int64
			if json.Unmarshal(p.TokenCount, &n) != nil {
				return bad("token_count", "must be an integer or null")
			}
			in.TokenCount = &n
		}
	}
	return nil
}

func (m *Module) deleteMessage(w http.ResponseWriter, r *http.Request) error {
	ids, err := sidecar.PathIDs(r, "user_id", "session_id", "message_id")
	if err != nil {
		return err
	}
	var subtree bool
	switch r.URL.Query().Get("subtree") {
	case "", "false":
	case "true":
		subtree = true
	default:
		return sidecar.BadRequest("invalid_query", "subtree must be true or false")
	}
	n, err := m.store.Delete(r.Context(), ids[0], ids[1], ids[2], subtree)
	if err != nil {
		return err
	}
	if n > 1 {
		// a subtree too big to take out of the index in its script dropped
		// the session's messages from it: the catch-up takes the rest in
		m.index.Touch(ids[0], ids[1])
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (m *Module) pop(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	msg, err := m.store.Pop(r.Context(), user, session)
	if err != nil {
		return err
	}
	sidecar.WriteBody(w, http.StatusOK, msg)
	return nil
}

func (m *Module) clear(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	_, err = m.store.Clear(r.Context(), user, session)
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
