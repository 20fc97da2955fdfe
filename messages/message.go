package messages

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/agentsidecar/agentsidecar/tokens"
)

// Limits of one message (docs/operations.md's limits table).
const (
	MaxRoleLength    = 32
	MaxContentBytes  = 256 << 10 // content, and parts as sent
	MaxMetadataBytes = 16 << 10
	MaxToolCalls     = 128
	MaxNameLength    = 256 // tool call ids and names, tool_call_id, model
	MaxFormatLength  = 64
	MaxTokenCount    = 1_000_000_000
	MaxBatch         = 1000 // messages in one append (one script)
	DefaultLimit     = 50
	MaxLimit         = 1000
	MaxChildren      = 1000
)

// messageIn is one message as a client sends it. Raw fields keep the bytes
// as sent: they are stored and answered unchanged.
type messageIn struct {
	ID         *string         `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Parts      json.RawMessage `json:"parts"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
	Item       json.RawMessage `json:"item"`
	Format     *string         `json:"format"`
	Model      *string         `json:"model"`
	TokenCount *int64          `json:"token_count"`
	Metadata   json.RawMessage `json:"metadata"`
	ParentID   json.RawMessage `json:"parent_id"`
}

// itemPath matches the member paths of a message's item in the bodies that
// carry messages (one message, a batch, a transaction's lists and
// replacements), as sidecar.DecodeJSONLax spells them.
var itemPath = regexp.MustCompile(`^(?:(?:messages|expected_suffix)\[\d+\]\.|(?:replacements\[\d+\]\.)?message\.)?item(?:$|[.\[])`)

// inItem reports whether path is inside a message's item: a framework's
// own data, kept byte for byte, so its strings may hold the lone surrogate
// escapes JavaScript strings hold ("\ud83d" of an emoji cut in two by
// String.slice): the item is stored and answered as sent, never decoded
// into a Go string (its text counts for tokens and search with U+FFFD in
// their place).
func inItem(path string) bool { return itemPath.MatchString(path) }

// message is a checked message, ready for a script.
type message struct {
	ID     string
	FP     string // fingerprint of the fields a retry must repeat
	Tokens int64
	Body   []byte   // the JSON object stored, without parent_id and created_at
	Text   []string // the text its search document is analysed from
}

// searchArgs are the script arguments of m's search document: its terms
// and length (the index keeps no text: a search's snippets come from the
// messages themselves), analysed only when a write sends them.
func (m message) searchArgs() []string {
	d := search.Analyze(m.Text...)
	return []string{d.Spec(), strconv.Itoa(d.Length)}
}

// parentRef is what a parent_id says: absent (the latest leaf), null (a new
// root) or an id.
type parentRef struct {
	Mode string // "latest", "root" or "id"
	ID   string
}

var null = []byte("null")

// present reports whether a raw field was sent with a value other than null.
func present(raw json.RawMessage) bool { return raw != nil && !bytes.Equal(raw, null) }

func bad(field, format string, args ...any) error {
	return sidecar.BadRequest("invalid_field", "field %q "+format, append([]any{field}, args...)...)
}

// parent reads m's parent_id.
func (m *messageIn) parent(field string) (parentRef, error) {
	switch {
	case m.ParentID == nil:
		return parentRef{Mode: "latest"}, nil
	case bytes.Equal(m.ParentID, null):
		return parentRef{Mode: "root"}, nil
	}
	var id string
	if json.Unmarshal(m.ParentID, &id) != nil || !sidecar.ValidID(id) {
		return parentRef{}, bad(field, "must be null or a message id (1-128 characters of A-Z a-z 0-9 _ . @ -)")
	}
	return parentRef{Mode: "id", ID: id}, nil
}

// check validates m (field names prefixed by at, e.g. "messages[2].";
// item at most maxItem bytes: SESSION_MAX_ITEM_BYTES) and returns it
// encoded, with a new UUIDv7 id when it has none. The first field found
// wrong is the error, in the order the fields are listed below.
func (m *messageIn) check(at string, maxItem int) (message, error) {
	var out message
	var err error
	if out.ID, err = m.checkID(at); err != nil {
		return out, err
	}
	content, err := m.checkContent(at)
	if err != nil {
		return out, err
	}
	if err := m.checkItem(at, maxItem); err != nil {
		return out, err
	}
	if err := m.checkUsage(at); err != nil {
		return out, err
	}
	out.Text = m.textsWith(content)
	if m.TokenCount != nil {
		out.Tokens = *m.TokenCount
	} else {
		out.Tokens = int64(tokens.Message(out.Text...))
	}
	out.Body = m.encode(out.ID, out.Tokens)
	out.FP = m.fingerprint()
	return out, nil
}

// checkID is m's id, or a new UUIDv7 when it has none.
func (m *messageIn) checkID(at string) (string, error) {
	if m.ID == nil {
		return newID(), nil
	}
	if !sidecar.ValidID(*m.ID) {
		return "", bad(at+"id", "must be 1-128 characters of A-Z a-z 0-9 _ . @ - (not . or ..)")
	}
	return *m.ID, nil
}

// checkContent checks the raw fields are UTF-8 (they are stored and
// answered as sent), the role, content, parts and tool fields; content is
// the content's text (nil: none).
func (m *messageIn) checkContent(at string) (content *string, err error) {
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"content", m.Content}, {"parts", m.Parts}, {"tool_calls", m.ToolCalls}, {"item", m.Item}, {"metadata", m.Metadata}} {
		if !utf8.Valid(f.raw) {
			return nil, bad(at+f.name, "holds bytes that are not UTF-8")
		}
	}
	if !validRole(m.Role) {
		return nil, bad(at+"role", "must be a lowercase word of 1-%d characters of a-z and _ (user, assistant, system, tool, developer, ...)", MaxRoleLength)
	}
	if present(m.Content) {
		content = new(string)
		if json.Unmarshal(m.Content, content) != nil {
			return nil, bad(at+"content", "must be a string")
		}
		if len(m.Content) > MaxContentBytes {
			return nil, bad(at+"content", "is %d bytes; at most %d", len(m.Content), MaxContentBytes)
		}
	}
	if present(m.Parts) {
		var parts []map[string]json.RawMessage
		if json.Unmarshal(m.Parts, &parts) != nil {
			return nil, bad(at+"parts", "must be a list of JSON objects")
		}
		if len(m.Parts) > MaxContentBytes {
			return nil, bad(at+"parts", "is %d bytes; at most %d", len(m.Parts), MaxContentBytes)
		}
	}
	if present(m.ToolCalls) {
		if err := checkToolCalls(at+"tool_calls", m.ToolCalls); err != nil {
			return nil, err
		}
	}
	if m.ToolCallID != nil && (*m.ToolCallID == "" || len(*m.ToolCallID) > MaxNameLength) {
		return nil, bad(at+"tool_call_id", "must be 1-%d bytes", MaxNameLength)
	}
	return content, nil
}

// checkItem checks a framework's item (at most maxItem bytes) and its
// format, which go together.
func (m *messageIn) checkItem(at string, maxItem int) error {
	if present(m.Item) {
		if len(m.Item) > maxItem {
			return bad(at+"item", "is %d bytes; at most %d (SESSION_MAX_ITEM_BYTES)", len(m.Item), maxItem)
		}
		if m.Format == nil {
			return bad(at+"format", "is required with item (e.g. openai.responses, ai-sdk.ui, adk.event)")
		}
	}
	if m.Format != nil {
		if !present(m.Item) {
			return bad(at+"format", "names the format of item: send it with item")
		}
		if !validFormat(*m.Format) {
			return bad(at+"format", "must be 1-%d characters of A-Z a-z 0-9 _ . -", MaxFormatLength)
		}
	}
	return nil
}

// checkUsage checks the model, token count and metadata.
func (m *messageIn) checkUsage(at string) error {
	if m.Model != nil && (*m.Model == "" || len(*m.Model) > MaxNameLength) {
		return bad(at+"model", "must be 1-%d bytes", MaxNameLength)
	}
	if m.TokenCount != nil && (*m.TokenCount < 0 || *m.TokenCount > MaxTokenCount) {
		return bad(at+"token_count", "must be an integer from 0 to %d", MaxTokenCount)
	}
	// metadata is any JSON value, as the AI SDK's UIMessage allows (an
	// object, a string, a number, a list): the host's strict decoder has
	// already checked it is one well-formed value.
	if present(m.Metadata) && len(m.Metadata) > MaxMetadataBytes {
		return bad(at+"metadata", "is %d bytes; at most %d", len(m.Metadata), MaxMetadataBytes)
	}
	return nil
}

// texts is the text of m that its token estimate and its search document
// are made from: content, then the text of parts, then of item. check
// takes it from a message as sent, the search index of a fork's copies
// from the message as stored (its raw fields are the bytes sent), so both
// give the same document.
func (m *messageIn) texts() []string {
	var content *string
	if present(m.Content) {
		content = new(string)
		if json.Unmarshal(m.Content, content) != nil {
			content = nil
		}
	}
	return m.textsWith(content)
}

// textsWith is texts with m's content already decoded (nil: none).
func (m *messageIn) textsWith(content *string) []string {
	var out []string
	if content != nil {
		out = append(out, *content)
	}
	if present(m.Parts) {
		out = appendTexts(out, m.Parts)
	}
	if present(m.Item) {
		out = appendTexts(out, m.Item)
	}
	return out
}

func validRole(r string) bool {
	if r == "" || len(r) > MaxRoleLength {
		return false
	}
	for i := 0; i < len(r); i++ {
		if (r[i] < 'a' || r[i] > 'z') && r[i] != '_' {
			return false
		}
	}
	return true
}

func validFormat(f string) bool {
	if f == "" || len(f) > MaxFormatLength {
		return false
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

type toolCall struct {
	ID        *string         `json:"id"`
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func checkToolCalls(field string, raw json.RawMessage) error {
	var calls []json.RawMessage
	if json.Unmarshal(raw, &calls) != nil {
		return bad(field, "must be a list of {id, name, arguments}")
	}
	if len(calls) > MaxToolCalls {
		return bad(field, "holds %d calls; at most %d", len(calls), MaxToolCalls)
	}
	for i, c := range calls {
		var tc toolCall
		f := field + "[" + strconv.Itoa(i) + "]"
		if sidecar.DecodeJSONBytes(c, &tc) != nil { // names exactly as declared, each once
			return bad(f, "must be an object {id, name, arguments} (id and name strings)")
		}
		if tc.ID == nil || *tc.ID == "" || len(*tc.ID) > MaxNameLength {
			return bad(f+".id", "must be a string of 1-%d bytes", MaxNameLength)
		}
		if tc.Name == nil || *tc.Name == "" || len(*tc.Name) > MaxNameLength {
			return bad(f+".name", "must be a string of 1-%d bytes", MaxNameLength)
		}
		if tc.Arguments == nil {
			return bad(f+".arguments", "is required (a JSON string or object)")
		}
	}
	return nil
}

// appendTexts adds the text of raw JSON v: every string whose nearest key
// is "content" or "text" (the text of parts and of a framework's item).
func appendTexts(out []string, raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return out
	}
	var walk func(v any, text bool)
	walk = func(v any, text bool) {
		switch x := v.(type) {
		case string:
			if text {
				out = append(out, x)
			}
		case []any:
			for _, e := range x {
				walk(e, text)
			}
		case map[string]any:
			// keys in order, so a message's texts (and its search
			// snippets) are the same each time it is analysed
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k], k == "content" || k == "text")
			}
		}
	}
	walk(v, false)
	return out
}

// encode is the message's JSON object without parent_id and created_at
// (the script appends them): raw values as sent, in a fixed field order.
func (m *messageIn) encode(id string, tok int64) []byte {
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	writeString(&b, id)
	b.WriteString(`,"role":`)
	writeString(&b, m.Role)
	raw := func(name string, v json.RawMessage) {
		if present(v) {
			b.WriteString(`,"` + name + `":`)
			b.Write(v)
		}
	}
	str := func(name string, v *string) {
		if v != nil {
			b.WriteString(`,"` + name + `":`)
			writeString(&b, *v)
		}
	}
	raw("content", m.Content)
	raw("parts", m.Parts)
	raw("tool_calls", m.ToolCalls)
	str("tool_call_id", m.ToolCallID)
	raw("item", m.Item)
	str("format", m.Format)
	str("model", m.Model)
	if m.TokenCount != nil {
		b.WriteString(`,"token_count":` + strconv.FormatInt(*m.TokenCount, 10))
	}
	raw("metadata", m.Metadata)
	b.WriteString(`,"tokens":` + strconv.FormatInt(tok, 10) + "}")
	return b.Bytes()
}

// jsonString is s as a JSON string without HTML escaping.
func jsonString(s string) json.RawMessage {
	var b bytes.Buffer
	writeString(&b, s)
	return b.Bytes()
}

// writeString writes s as a JSON string without HTML escaping.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// fingerprint hashes the fields a retry must repeat to be the same message:
// role, content, parts, item, format, metadata and the tool fields, each as
// sent.
func (m *messageIn) fingerprint() string {
	h := sha1.New()
	field := func(present bool, v []byte) {
		var n [9]byte
		if present {
			n[0] = 1
		}
		binary.BigEndian.PutUint64(n[1:], uint64(len(v)))
		h.Write(n[:])
		h.Write(v)
	}
	ptr := func(s *string) {
		if s == nil {
			field(false, nil)
		} else {
			field(true, []byte(*s))
		}
	}
	field(true, []byte(m.Role))
	for _, raw := range []json.RawMessage{m.Content, m.Parts, m.ToolCalls, m.Item, m.Metadata} {
		field(present(raw), raw)
	}
	ptr(m.ToolCallID)
	ptr(m.Format)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// newID is a lowercase UUIDv7: 48 bits of Unix milliseconds, then random.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
