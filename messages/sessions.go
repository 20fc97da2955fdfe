package messages

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Sessions made from a session: fork and split.

// MaxTitleLength bounds a new session's title, in characters (the
// registry's rule).
const MaxTitleLength = 256

type forkIn struct {
	At        string  `json:"at"`
	SessionID *string `json:"session_id"`
	Title     *string `json:"title"`
}

type splitIn struct {
	Summary   *string `json:"summary"`
	SessionID *string `json:"session_id"`
	Title     *string `json:"title"`
}

// newSession is the id, title and Idempotency-Key of a session a fork or
// split creates: the id sent, else one derived from the key (a retry names
// the same session), else a new UUIDv7.
func newSession(r *http.Request, user, session string, id, title *string) (sid, key string, titleArgs [2]string, err error) {
	if key, err = sidecar.IdempotencyKey(r); err != nil {
		return
	}
	switch {
	case id != nil:
		if !sidecar.ValidID(*id) {
			err = bad("session_id", "must be 1-128 characters of A-Z a-z 0-9 _ . @ - (not . or ..)")
			return
		}
		sid = *id
	case key != "":
		sum := sha1.Sum([]byte("agentsidecar/derive\x00" + user + "\x00" + session + "\x00" + key))
		sid = hex.EncodeToString(sum[:16])
	default:
		sid = newID()
	}
	titleArgs = [2]string{"0", ""}
	if title != nil {
		if utf8.RuneCountInString(*title) > MaxTitleLength {
			err = bad("title", "is %d characters; at most %d", utf8.RuneCountInString(*title), MaxTitleLength)
			return
		}
		titleArgs = [2]string{"1", *title}
	}
	return
}

func (m *Module) fork(w http.ResponseWriter, r *http.Request) error {
	user, session, in, err := sidecar.SessionJSON[forkIn](r)
	if err != nil {
		return err
	}
	if !sidecar.ValidID(in.At) {
		return bad("at", "must be a message id of the session")
	}
	sid, key, title, err := newSession(r, user, session, in.SessionID, in.Title)
	if err != nil {
		return err
	}
	if sid == session {
		return bad("session_id", "names the session forked; a fork is a new session")
	}
	created, err := m.store.newSession(r, luaScripts.Fork, user, session, in.At, sid, title[0], title[1], key)
	if err != nil {
		return err
	}
	if created {
		m.indexFork(r.Context(), user, sid, in.At)
	}
	return m.writeRecord(w, r, created, user, sid)
}

// indexFork puts the messages a fork copied (the path root..at of the new
// session sid) into the search index before the fork answers, within
// three quarters of what is left of the request's deadline (the record
// read keeps the rest). The fork stands whatever happens: an error is
// logged, and the copies not indexed stay out of the index.
func (m *Module) indexFork(ctx context.Context, user, sid, at string) {
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(d)*3/4)
		defer cancel()
	}
	until := time.Now().Add(search.JobTimeout)
	if d, ok := ctx.Deadline(); ok {
		until = d
	}
	if _, err := m.index.Session(ctx, user, sid, until); err != nil {
		m.logger.Warn("search index: messages a fork copied not all indexed", "user_id", user, "session_id", sid, "err", err)
	}
}

func (m *Module) split(w http.ResponseWriter, r *http.Request) error {
	user, session, in, err := sidecar.SessionJSON[splitIn](r)
	if err != nil {
		return err
	}
	if in.Summary == nil || *in.Summary == "" || utf8.RuneCountInString(*in.Summary) > sessionstore.MaxSummaryLength {
		return bad("summary", "must be a string of 1-%d characters", sessionstore.MaxSummaryLength)
	}
	sid, key, title, err := newSession(r, user, session, in.SessionID, in.Title)
	if err != nil {
		return err
	}
	if sid == session {
		return bad("session_id", "names the session split; the continuation is a new session")
	}
	content := jsonString(*in.Summary)
	sys := messageIn{Role: "system", Content: content}
	msg, err := sys.check("", m.limits.MaxItemBytes)
	if err != nil {
		return err
	}
	args := []string{sid, title[0], title[1], *in.Summary, key,
		msg.ID, msg.FP, strconv.FormatInt(msg.Tokens, 10), string(msg.Body), strconv.Itoa(m.cfg.MaxMessages)}
	created, err := m.store.newSession(r, luaScripts.Split, user, session, append(args, m.store.searchArgs(msg)...)...)
	if err != nil {
		return err
	}
	if created {
		m.store.CountEnded("split")
		m.appended.Inc()
	}
	return m.writeRecord(w, r, created, user, sid)
}

// writeRecord answers the record of session sid: 201 when created now, 200
// for a retry.
func (m *Module) writeRecord(w http.ResponseWriter, r *http.Request, created bool, user, sid string) error {
	st, err := m.store.Get(r.Context(), user, sid)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	sidecar.WriteJSON(w, status, st.JSON(m.store.Config().AbandonAfter(), true))
	return nil
}

// newSession runs a fork or split script: created true for {'ok',
// 'started'}, false for a retry {'dup'}; {'missing'} (no such session, or
// for a fork no message at) answers "no session", as it always has.
func (s *Store) newSession(r *http.Request, script *lua.Script, user, session string, args ...string) (bool, error) {
	rep, err := s.Run(r.Context(), script, user, session, args...)
	if errors.Is(err, redisstore.ErrNotFound) {
		return false, redisstore.NotFound("no session %s/%s", user, session)
	}
	if err != nil || rep.Dup {
		return false, err
	}
	status, err := rep.String(0)
	if err != nil {
		return false, redisstore.Wrap(script.Name, err)
	}
	if status != "started" {
		return false, s.outcome(script.Name, rep, status, user, session)
	}
	sessionstore.CountStarted()
	return true, nil
}
