package checkpoints

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Blob is a value the saver serialized: its serde's type and the base64
// of its bytes. The sidecar stores it as it came.
type Blob struct {
	Type string `json:"type"`
	Data string `json:"data"`
}

// ChannelValue is one channel's value at a version.
type ChannelValue struct {
	Channel string `json:"channel"`
	Version string `json:"version"`
	Type    string `json:"type"`
	Data    string `json:"data"`
}

// Write is a pending write of a task.
type Write struct {
	TaskID   string `json:"task_id,omitempty"`
	TaskPath string `json:"task_path,omitempty"`
	Idx      int    `json:"idx"`
	Channel  string `json:"channel"`
	Type     string `json:"type"`
	Data     string `json:"data"`
}

// putBody is a put: the checkpoint (serialized without its channel
// values), its metadata, the versions of every channel it has and the
// values of those the put changed.
type putBody struct {
	CheckpointNS       string            `json:"checkpoint_ns"`
	CheckpointID       string            `json:"checkpoint_id"`
	ParentCheckpointID *string           `json:"parent_checkpoint_id"`
	Checkpoint         Blob              `json:"checkpoint"`
	Metadata           json.RawMessage   `json:"metadata"`
	ChannelVersions    map[string]string `json:"channel_versions"`
	ChannelValues      []ChannelValue    `json:"channel_values"`
}

// writesBody is a putWrites.
type writesBody struct {
	CheckpointNS string  `json:"checkpoint_ns"`
	CheckpointID string  `json:"checkpoint_id"`
	TaskID       string  `json:"task_id"`
	TaskPath     string  `json:"task_path"`
	Writes       []Write `json:"writes"`
}

// Tuple is a checkpoint as a read answers it.
type Tuple struct {
	CheckpointNS       string          `json:"checkpoint_ns"`
	CheckpointID       string          `json:"checkpoint_id"`
	ParentCheckpointID *string         `json:"parent_checkpoint_id"`
	Checkpoint         Blob            `json:"checkpoint"`
	Metadata           json.RawMessage `json:"metadata"`
	ChannelValues      []ChannelValue  `json:"channel_values"`
	PendingWrites      []Write         `json:"pending_writes"`
}

// ref names a stored checkpoint.
type ref struct {
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id"`
}

// Bounds of the names (bytes of UTF-8, never a NUL).
const (
	maxNS      = 1024 // checkpoint_ns, task_path
	maxID      = 256  // checkpoint_id, task_id, channel
	maxVersion = 128
	maxType    = 64
)

// name refuses a name that is empty (unless may be), longer than most
// bytes or holds a NUL.
func name(field, v string, most int, empty bool) error {
	switch {
	case v == "" && !empty:
		return sidecar.BadRequest("invalid_field", "%s is required", field)
	case len(v) > most:
		return sidecar.BadRequest("invalid_field", "%s is %d bytes, more than %d", field, len(v), most)
	case strings.IndexByte(v, 0) >= 0:
		return sidecar.BadRequest("invalid_field", "%s holds a NUL character", field)
	case !utf8.ValidString(v):
		return sidecar.BadRequest("invalid_field", "%s is not UTF-8", field)
	}
	return nil
}

// blob refuses a serialized value that is not {type, base64} of at most
// most bytes.
func blob(field, typ, data string, most int) error {
	if err := name(field+".type", typ, maxType, false); err != nil {
		return err
	}
	if base64.StdEncoding.DecodedLen(len(data)) > most+2 {
		return sidecar.BadRequest("invalid_field", "%s.data is more than %d bytes (SESSION_MAX_ITEM_BYTES)", field, most)
	}
	n, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return sidecar.BadRequest("invalid_field", "%s.data is not standard base64", field)
	}
	if len(n) > most {
		return sidecar.BadRequest("invalid_field", "%s.data is %d bytes, more than %d (SESSION_MAX_ITEM_BYTES)", field, len(n), most)
	}
	return nil
}

// object refuses metadata that is not a JSON object of at most most bytes.
func object(field string, raw json.RawMessage, most int) error {
	t := strings.TrimSpace(string(raw))
	if !strings.HasPrefix(t, "{") {
		return sidecar.BadRequest("invalid_field", "%s must be a JSON object", field)
	}
	if len(raw) > most {
		return sidecar.BadRequest("invalid_field", "%s is %d bytes, more than %d (SESSION_MAX_ITEM_BYTES)", field, len(raw), most)
	}
	return nil
}

func (p *putBody) check(most int) error {
	if err := errors.Join(name("checkpoint_ns", p.CheckpointNS, maxNS, true), name("checkpoint_id", p.CheckpointID, maxID, false)); err != nil {
		return first(err)
	}
	if p.ParentCheckpointID != nil {
		if err := name("parent_checkpoint_id", *p.ParentCheckpointID, maxID, false); err != nil {
			return err
		}
	}
	if err := blob("checkpoint", p.Checkpoint.Type, p.Checkpoint.Data, most); err != nil {
		return err
	}
	if p.Metadata == nil {
		p.Metadata = json.RawMessage("{}")
	}
	if err := object("metadata", p.Metadata, most); err != nil {
		return err
	}
	if len(p.ChannelVersions) > MaxChannels {
		return sidecar.BadRequest("invalid_field", "channel_versions names %d channels, more than %d", len(p.ChannelVersions), MaxChannels)
	}
	for ch, v := range p.ChannelVersions {
		if err := errors.Join(name("channel_versions key", ch, maxID, false), name("channel_versions."+ch, v, maxVersion, false)); err != nil {
			return first(err)
		}
	}
	if len(p.ChannelValues) > MaxChannels {
		return sidecar.BadRequest("invalid_field", "channel_values holds %d values, more than %d", len(p.ChannelValues), MaxChannels)
	}
	seen := make(map[string]bool, len(p.ChannelValues))
	for i, v := range p.ChannelValues {
		f := "channel_values[" + itoa(i) + "]"
		if err := errors.Join(name(f+".channel", v.Channel, maxID, false), name(f+".version", v.Version, maxVersion, false)); err != nil {
			return first(err)
		}
		if err := blob(f, v.Type, v.Data, most); err != nil {
			return err
		}
		k := v.Channel + "\x00" + v.Version
		if seen[k] {
			return sidecar.BadRequest("invalid_field", "%s repeats channel %q at version %q", f, v.Channel, v.Version)
		}
		seen[k] = true
	}
	return nil
}

func (b *writesBody) check(most int) error {
	if err := errors.Join(name("checkpoint_ns", b.CheckpointNS, maxNS, true), name("checkpoint_id", b.CheckpointID, maxID, false),
		name("task_id", b.TaskID, maxID, false), name("task_path", b.TaskPath, maxNS, true)); err != nil {
		return first(err)
	}
	if len(b.Writes) > MaxWrites {
		return sidecar.BadRequest("invalid_field", "writes holds %d writes, more than %d", len(b.Writes), MaxWrites)
	}
	for i, w := range b.Writes {
		f := "writes[" + itoa(i) + "]"
		if w.TaskID != "" || w.TaskPath != "" {
			return sidecar.BadRequest("invalid_field", "%s: task_id and task_path belong to the body, not a write", f)
		}
		if w.Idx < -1000 || w.Idx >= 1000000 {
			return sidecar.BadRequest("invalid_field", "%s.idx must be from -1000 to 999999, not %d", f, w.Idx)
		}
		if err := name(f+".channel", w.Channel, maxID, false); err != nil {
			return err
		}
		if err := blob(f, w.Type, w.Data, most); err != nil {
			return err
		}
	}
	return nil
}

// first is the first of joined errors (errors.Join of name checks).
func first(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()[0]
	}
	return err
}

// decode reads a write's ids and body and checks the body.
func decode[B any, P interface {
	*B
	check(int) error
}](r *http.Request, most int) (user, session string, body *B, err error) {
	if user, session, err = sidecar.SessionIDs(r); err != nil {
		return "", "", nil, err
	}
	raw, err := sidecar.ReadJSON(r)
	if err != nil {
		return "", "", nil, err
	}
	body = new(B)
	if err := sidecar.DecodeJSONBytes(raw, body); err != nil {
		return "", "", nil, err
	}
	if err := P(body).check(most); err != nil {
		return "", "", nil, err
	}
	return user, session, body, nil
}

func (m *Module) put(w http.ResponseWriter, r *http.Request) error {
	user, session, body, err := decode[putBody](r, m.limits.MaxItemBytes)
	if err != nil {
		return err
	}
	if err := m.store.Put(r.Context(), user, session, body); err != nil {
		return err
	}
	sidecar.WriteJSON(w, http.StatusOK, ref{CheckpointNS: body.CheckpointNS, CheckpointID: body.CheckpointID})
	return nil
}

func (m *Module) putWrites(w http.ResponseWriter, r *http.Request) error {
	user, session, body, err := decode[writesBody](r, m.limits.MaxItemBytes)
	if err != nil {
		return err
	}
	n, err := m.store.PutWrites(r.Context(), user, session, body)
	if err != nil {
		return err
	}
	sidecar.WriteJSON(w, http.StatusOK, struct {
		Stored int `json:"stored"`
	}{n})
	return nil
}

func (m *Module) getTuple(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	ns, id := q.Get("checkpoint_ns"), q.Get("checkpoint_id")
	if err := errors.Join(name("checkpoint_ns", ns, maxNS, true), name("checkpoint_id", id, maxID, true)); err != nil {
		return recode("invalid_query", first(err))
	}
	most, done, err := sidecar.ReserveAnswer(r.Context(), m.readCap())
	if err != nil {
		return err
	}
	t, err := m.store.Read(r.Context(), user, session, ns, id, most)
	if errors.Is(err, redisstore.ErrNotFound) {
		done(0)
		if id == "" {
			return redisstore.NotFound("thread %s/%s has no checkpoint in namespace %q", user, session, ns)
		}
		return redisstore.NotFound("thread %s/%s has no checkpoint %s in namespace %q", user, session, id, ns)
	}
	return answer(w, t, err, done)
}

// answer writes a read's answer v (or returns its err), giving back to the
// in-flight budget what it did not use.
func answer(w http.ResponseWriter, v any, err error, done func(int)) error {
	if err != nil {
		done(0)
		return err
	}
	body, err := json.Marshal(v)
	if err != nil {
		done(0)
		return err
	}
	done(len(body))
	sidecar.WriteBody(w, http.StatusOK, body)
	return nil
}

// recode is name's refusal of a query parameter under code: invalid_query,
// or invalid_cursor for the list's before (its next_before).
func recode(code string, err error) error {
	var e *sidecar.Error
	if errors.As(err, &e) {
		return sidecar.BadRequest(code, "%s", e.Message)
	}
	return err
}

// listAnswer is a page of a list: next_before continues it.
type listAnswer struct {
	Checkpoints []Tuple `json:"checkpoints"`
	NextBefore  *string `json:"next_before"`
}

func (m *Module) list(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	ns, byNS := q.Get("checkpoint_ns"), q.Has("checkpoint_ns")
	before := q.Get("before")
	if err := name("checkpoint_ns", ns, maxNS, true); err != nil {
		return recode("invalid_query", err)
	}
	if err := name("before", before, maxID, true); err != nil {
		return recode(sidecar.CodeBadCursor, err)
	}
	limit, err := sidecar.QueryInt(r, "limit", DefaultListLimit, 1, MaxListLimit)
	if err != nil {
		return err
	}
	var filter map[string]any
	if f := q.Get("filter"); f != "" {
		if err := sidecar.DecodeJSONBytes([]byte(f), &filter); err != nil || filter == nil {
			return sidecar.BadRequest("invalid_query", "filter must be a JSON object of metadata values")
		}
	}
	most, done, err := sidecar.ReserveAnswer(r.Context(), m.readCap())
	if err != nil {
		return err
	}
	out, err := m.store.List(r.Context(), user, session, listQuery{
		NS: ns, ByNS: byNS, Before: before, Limit: limit, Filter: filter, MaxBytes: most,
	})
	return answer(w, out, err, done)
}

// matches reports whether metadata holds every filter key with an equal
// value (JSON values compared decoded: 1 and 1.0 are equal).
func matches(metadata json.RawMessage, filter map[string]any) bool {
	if len(filter) == 0 {
		return true
	}
	var md map[string]any
	if json.Unmarshal(metadata, &md) != nil {
		return false
	}
	for k, want := range filter {
		got, ok := md[k]
		if !ok || !reflect.DeepEqual(got, want) {
			return false
		}
	}
	return true
}
