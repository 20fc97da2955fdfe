package messages

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Factory registers the module with the host.
var Factory = sidecar.Factory{Name: "messages", New: New}

// Module serves the messages routes.
type Module struct {
	store       *Store
	cfg         Config
	limits      sidecar.Limits
	index       *search.Index // SEARCH_INDEX, the messages' catch-up
	logger      *slog.Logger
	appended    prometheus.Counter
	compactions prometheus.Counter
}

// New builds the module over the host's shared session store.
func New(_ context.Context, deps sidecar.Deps) (sidecar.Module, error) {
	s, cfg, x, err := search.Open[Config](deps)
	if err != nil {
		return nil, err
	}
	m := &Module{store: &Store{Store: s, cfg: cfg, maxAnswer: deps.Limits.MaxAnswerBytes, mode: x.Mode(), index: x},
		cfg: cfg, limits: deps.Limits, logger: deps.Logger, index: x,
		appended:    sidecar.NewCounter("sidecar_messages_appended_total", "Messages stored by appends and upserts (retries not counted)."),
		compactions: sidecar.NewCounter("sidecar_messages_compactions_total", "Compactions stored.")}
	if deps.Registerer != nil {
		for _, c := range []prometheus.Collector{m.appended, m.compactions} {
			if err := deps.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	x.Register(m.store.CatchUpStep)
	x.RegisterTexts("message", m.store.searchTexts)
	return m, nil
}

// Close implements sidecar.Closer: stops the host's search worker (shared
// with the sessions module; either may close it).
func (m *Module) Close(ctx context.Context) error { return m.index.Close(ctx) }

// Name implements sidecar.Module.
func (m *Module) Name() string { return "messages" }

const base = "/v1/users/{user_id}/sessions/{session_id}/messages"

// Routes implements sidecar.Module.
func (m *Module) Routes() []sidecar.Route {
	return []sidecar.Route{
		{Pattern: "POST " + base, Handler: m.appendMessages, MaxBodyBytes: m.limits.MaxMessageBodyBytes},
		{Pattern: "GET " + base, Handler: m.listMessages, Query: []string{"leaf", "order", "limit", "after", "before", "offset", "compacted"}},
		{Pattern: "GET " + base + "/{message_id}", Handler: m.getMessage},
		{Pattern: "GET " + base + "/{message_id}/children", Handler: m.children, Query: []string{"limit"}},
		{Pattern: "PUT " + base + "/{message_id}", Handler: m.putMessage, MaxBodyBytes: m.limits.MaxMessageBodyBytes},
		{Pattern: "PATCH " + base + "/{message_id}", Handler: m.patchMessage, MaxBodyBytes: m.limits.MaxMessageBodyBytes},
		{Pattern: "DELETE " + base + "/{message_id}", Handler: m.deleteMessage, Query: []string{"subtree"}},
		{Pattern: "POST " + base + "/pop", Handler: m.pop},
		{Pattern: "POST " + base + "/transactions", Handler: m.transaction, MaxBodyBytes: m.limits.MaxMessageBodyBytes},
		{Pattern: "DELETE " + base, Handler: m.clear},
		{Pattern: "POST /v1/users/{user_id}/sessions/{session_id}/compactions", Handler: m.compact},
		{Pattern: "GET /v1/users/{user_id}/sessions/{session_id}/compactions", Handler: m.listCompactions},
		{Pattern: "POST /v1/users/{user_id}/sessions/{session_id}/fork", Handler: m.fork},
		{Pattern: "GET /v1/users/{user_id}/search", Handler: m.searchUser, Query: []string{"q", "limit"}},
		{Pattern: "POST /v1/users/{user_id}/sessions/{session_id}/split", Handler: m.split},
	}
}

// writeStatus is a write's status: 201 when it stored its messages
// (counted), 200 for a retry, whose answer carries Sidecar-Truncated when
// the answer's cap cut it.
func (m *Module) writeStatus(w http.ResponseWriter, st Stored) int {
	sidecar.MarkTruncated(w, st.Cut)
	if !st.Created {
		return http.StatusOK
	}
	m.appended.Add(float64(max(len(st.Messages), st.Count)))
	return http.StatusCreated
}

// postBody is one message, or {"messages": [...]}.
type postBody struct {
	messageIn
	Messages []messageIn `json:"messages"`
}

func (m *Module) appendMessages(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	var body postBody
	if err := sidecar.DecodeJSONLax(r, &body, inItem); err != nil {
		return err
	}
	ifMatch, err := leafPrecondition(r)
	if err != nil {
		return err
	}
	key, err := sidecar.IdempotencyKey(r)
	if err != nil {
		return err
	}
	batch := body.Messages != nil
	in := body.Messages
	if !batch {
		in = []messageIn{body.messageIn}
	} else if !body.messageIn.empty() {
		return sidecar.BadRequest("invalid_field", "a batch body holds only \"messages\"; put each message's fields inside it")
	}
	msgs, parent, err := checkBatch(in, batch, m.limits.MaxItemBytes)
	if err != nil {
		return err
	}
	st, err := m.store.Append(r.Context(), user, session, msgs, parent, ifMatch, key)
	if err != nil {
		return err
	}
	status := m.writeStatus(w, st)
	if !batch && len(st.Messages) == 1 {
		sidecar.WriteBody(w, status, st.Messages[0])
		return nil
	}
	sidecar.WriteBody(w, status, messagesObject(st.Messages))
	return nil
}

// empty reports whether m has no field set (the top level of a batch).
func (m *messageIn) empty() bool {
	return m.ID == nil && m.Role == "" && m.Content == nil && m.Parts == nil && m.ToolCalls == nil &&
		m.ToolCallID == nil && m.Item == nil && m.Format == nil && m.Model == nil && m.TokenCount == nil &&
		m.Metadata == nil && m.ParentID == nil
}

// checkBatch checks the messages of an append and their chaining: the
// first one's parent_id places the batch, each later one's parent is the
// one before it (a parent_id there must name it).
func checkBatch(in []messageIn, batch bool, maxItem int) ([]message, parentRef, error) {
	if len(in) == 0 || len(in) > MaxBatch {
		return nil, parentRef{}, sidecar.BadRequest("invalid_field", "field \"messages\" must hold 1 to %d messages", MaxBatch)
	}
	out := make([]message, len(in))
	seen := map[string]bool{}
	var parent parentRef
	for i := range in {
		at := ""
		if batch {
			at = "messages[" + strconv.Itoa(i) + "]."
		}
		msg, err := in[i].check(at, maxItem)
		if err != nil {
			return nil, parentRef{}, err
		}
		p, err := in[i].parent(at + "parent_id")
		if err != nil {
			return nil, parentRef{}, err
		}
		if i == 0 {
			parent = p
		} else if p.Mode != "latest" && (p.Mode != "id" || p.ID != out[i-1].ID) {
			return nil, parentRef{}, sidecar.BadRequest("invalid_field", "field %q must be absent or %q: a batch is chained, each message the child of the one before", at+"parent_id", out[i-1].ID)
		}
		if seen[msg.ID] {
			return nil, parentRef{}, sidecar.BadRequest("invalid_field", "field %q: id %s appears twice in the batch", at+"id", msg.ID)
		}
		seen[msg.ID] = true
		out[i] = msg
	}
	return out, parent, nil
}

// leafPrecondition reads If-Match: "<leaf id>" (nil when absent).
func leafPrecondition(r *http.Request) (*string, error) {
	v := r.Header.Get("If-Match")
	if v == "" {
		return nil, nil
	}
	id := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), `"`), `"`)
	if !sidecar.ValidID(id) {
		return nil, sidecar.BadRequest("invalid_header", "If-Match must be the latest leaf's message id in quotes, e.g. If-Match: \"m-1\"")
	}
	return &id, nil
}

// messagesObject is {"messages": [...]} around stored messages, in one
// allocation (with room for WriteBody's newline): an answer may be MiBs.
func messagesObject(msgs [][]byte) []byte {
	return listObject(`{"messages":[`, msgs, "]}")
}

// listObject is head, msgs joined by commas, then tail, in one allocation
// (with room for WriteBody's newline).
func listObject(head string, msgs [][]byte, tail string) []byte {
	n := len(head) + len(tail) + 1
	for _, m := range msgs {
		n += len(m) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, head...)
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, tail...)
}

func (m *Module) getMessage(w http.ResponseWriter, r *http.Request) error {
	if strings.HasPrefix(r.PathValue("message_id"), compactionPrefix) {
		return sidecar.NotFound("a compaction's synthetic message is never stored; read GET .../compactions")
	}
	ids, err := sidecar.PathIDs(r, "user_id", "session_id", "message_id")
	if err != nil {
		return err
	}
	msg, err := m.store.One(r.Context(), ids[0], ids[1], ids[2])
	if err != nil {
		return err
	}
	sidecar.WriteBody(w, http.StatusOK, msg)
	return nil
}

func (m *Module) children(w http.ResponseWriter, r *http.Request) error {
	ids, err := sidecar.PathIDs(r, "user_id", "session_id", "message_id")
	if err != nil {
		return err
	}
	limit, err := sidecar.QueryInt(r, "limit", MaxChildren, 1, MaxChildren)
	if err != nil {
		return err
	}
	msgs, cut, err := m.store.Children(r.Context(), ids[0], ids[1], ids[2], limit)
	if err != nil {
		return err
	}
	sidecar.MarkTruncated(w, cut)
	sidecar.WriteBody(w, http.StatusOK, messagesObject(msgs))
	return nil
}

func (m *Module) listMessages(w http.ResponseWriter, r *http.Request) error {
	user, session, err := sidecar.SessionIDs(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var pq PageQuery
	if pq.Leaf = q.Get("leaf"); pq.Leaf != "" && !sidecar.ValidID(pq.Leaf) {
		return sidecar.BadRequest("invalid_query", "leaf must be a message id")
	}
	switch q.Get("order") {
	case "", "asc":
	case "desc":
		pq.Desc = true
	default:
		return sidecar.BadRequest("invalid_query", "order must be asc or desc")
	}
	if pq.Limit, err = sidecar.QueryInt(r, "limit", DefaultLimit, 1, MaxLimit); err != nil {
		return err
	}
	if pq.Offset, err = sidecar.QueryInt(r, "offset", 0, 0, MaxMessagesCeiling); err != nil {
		return err
	}
	before, after := q.Get("before"), q.Get("after")
	switch {
	case before != "" && after != "":
		return sidecar.BadRequest("invalid_query", "give before or after, not both")
	case before != "":
		pq.Cursor, pq.At = "before", before
	case after != "":
		pq.Cursor, pq.At = "after", after
	}
	if pq.Cursor != "" && !validCursor(pq.At) {
		return sidecar.BadCursor("%s must be a message id", pq.Cursor)
	}
	switch q.Get("compacted") {
	case "", "true":
	case "false":
		pq.Raw = true
	default:
		return sidecar.BadRequest("invalid_query", "compacted must be true or false")
	}
	p, err := m.store.Path(r.Context(), user, session, pq)
	if err != nil {
		return err
	}
	next := "null"
	if p.NextCursor != "" {
		next = strconv.Quote(p.NextCursor)
	}
	suggested := m.cfg.CompactAfterTokens > 0 && p.LatestTokens > m.cfg.CompactAfterTokens
	tail := `],"total":` + strconv.FormatInt(p.Total, 10) + `,"total_tokens":` + strconv.FormatInt(p.TotalTokens, 10) +
		`,"next_cursor":` + next + `,"compaction_suggested":` + strconv.FormatBool(suggested) + "}"
	b := listObject(`{"messages":[`, p.Messages, tail)
	sidecar.MarkTruncated(w, p.Cut)
	sidecar.WriteBody(w, http.StatusOK, b)
	return nil
}

var _ sidecar.Module = (*Module)(nil)
