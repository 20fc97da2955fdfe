package sessions

import (
	"context"
	"errors"
	"strconv"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
)

// The id indexes (the entries list by qa_id, the context list by id) are
// kept by the scripts that write the lists; another writer (Cognee) does
// not keep them. When it appended, a script indexes the new elements; when
// it rewrote a list, the index is made again from the start. One script
// indexes at most one step (lua/lib/idindex.lua: 256 elements, about
// 1 MiB), so no script's work grows with the list: a script that needs the
// whole index and finds it short answers {'index_build', which} before its
// first write, and exec runs session_index_build one step at a time until
// the index covers the list, then the script again.
const (
	// MaxIndexSteps bounds the index steps one call runs (65 536 steps of
	// 256 elements index lists of 16 million); a list another program
	// keeps rewriting faster than the steps go is a conflict, not a loop.
	MaxIndexSteps = 1 << 16
	// MaxIndexRounds bounds how often one call finds the index short again
	// after it was built (another writer rewrote the list meanwhile).
	MaxIndexRounds = 8
)

// errIndexUnsettled is the refusal when another writer kept rewriting a
// list while the sidecar indexed it.
func errIndexUnsettled(user, session, which string) error {
	return redisstore.Refuse(redisstore.ErrConflict, "index_unsettled",
		"the %s list of session %s/%s kept changing while the sidecar indexed it (another program rewrites it); nothing was changed: retry", listName(which), user, session)
}

func listName(which string) string {
	if which == "qa" {
		return "entries"
	}
	return which
}

// run runs one of the module's scripts, which take SESSION_MAX_ENTRIES
// first (after the core's settings; lib/idindex.lua, open).
func (s *Store) run(ctx context.Context, script *lua.Script, user, session string, args ...string) (lua.Reply, error) {
	return s.Run(ctx, script, user, session, append([]string{strconv.Itoa(s.Config().MaxEntries)}, args...)...)
}

// exec runs a session script that finds an element through an id index,
// building the index first, a step at a time, whenever the script asks
// for it. Each step is one short script; the loop honours ctx.
func (s *Store) exec(ctx context.Context, script *lua.Script, user, session string, args ...string) (lua.Reply, error) {
	steps := 0
	for round := 0; ; round++ {
		r, err := s.run(ctx, script, user, session, args...)
		var build *lua.IndexBuild
		if !errors.As(err, &build) {
			return r, err
		}
		if round == MaxIndexRounds {
			return lua.Reply{}, errIndexUnsettled(user, session, build.Which)
		}
		if err := s.buildIndex(ctx, user, session, build.Which, &steps); err != nil {
			return lua.Reply{}, err
		}
	}
}

// execFound is exec for a script that answers 'ok' (done) or 'missing' (no
// such element: redisstore.ErrNotFound).
func (s *Store) execFound(ctx context.Context, script *lua.Script, user, session string, args ...string) error {
	_, err := s.exec(ctx, script, user, session, args...)
	return err
}

// buildIndex runs session_index_build until the index which covers its
// list, counting the steps in *steps.
func (s *Store) buildIndex(ctx context.Context, user, session, which string, steps *int) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if *steps == MaxIndexSteps {
			return errIndexUnsettled(user, session, which)
		}
		*steps++
		r, err := s.run(ctx, luaScripts.IndexBuild, user, session, which)
		if err != nil {
			return err
		}
		indexSteps.WithLabelValues(which).Inc()
		if done, err := r.Flag(0); err != nil {
			return redisstore.Wrap(luaScripts.IndexBuild.Name, err)
		} else if done {
			return nil
		}
	}
}
