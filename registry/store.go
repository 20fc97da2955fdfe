package registry

import (
	"context"
	"strconv"

	"github.com/agentsidecar/agentsidecar/lua"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Store is the module's writes over the shared session runner, each one
// script (lua/registry_*.lua).
type Store struct{ *sessionstore.Store }

// NewSession is what a create stores.
type NewSession struct {
	Title    *string
	Metadata string // flat JSON string map, "" = none
	Key      string // Idempotency-Key, "" = none
}

// Create creates the session as running with its title and metadata.
// created is false for a repeat of the same Idempotency-Key (nothing
// written); an existing session is a session_exists conflict.
func (s *Store) Create(ctx context.Context, user, session string, n NewSession) (created bool, err error) {
	hasTitle, title := flag(n.Title)
	msg, err := s.Exec(ctx, lua.RegistryCreate, user, session, hasTitle, title, n.Metadata, n.Key)
	if err != nil {
		return false, err
	}
	code, err := msg.AsInt64()
	if err != nil {
		return false, redisstore.Wrap(lua.RegistryCreate.Name, err)
	}
	switch code {
	case 0:
		return false, redisstore.Refuse(redisstore.ErrConflict, "session_exists", "session %s/%s already exists", user, session)
	case 2:
		return false, nil
	}
	sessionstore.CountStarted()
	return true, nil
}

// Update is a PATCH: Title "" unchanged, "set" (to TitleValue) or "null";
// MetaSet "" none, "null" (remove all) or a JSON object of the keys to
// set; MetaRemove the keys to remove.
type Update struct {
	Title, TitleValue string
	MetaSet           string
	MetaRemove        []string
}

// Update applies u in one script (404 refusal for no such session; 400
// when the merged metadata would exceed MaxMetadataKeys).
func (s *Store) Update(ctx context.Context, user, session string, u Update) error {
	args := append([]string{u.Title, u.TitleValue, u.MetaSet, strconv.Itoa(MaxMetadataKeys)}, u.MetaRemove...)
	msg, err := s.Exec(ctx, lua.RegistryUpdate, user, session, args...)
	if err != nil {
		return err
	}
	code, err := msg.AsInt64()
	if err != nil {
		return redisstore.Wrap(lua.RegistryUpdate.Name, err)
	}
	switch code {
	case 0:
		return redisstore.NotFound("no session %s/%s", user, session)
	case -1:
		return sidecar.BadRequest("invalid_field", "field \"metadata\": the merged metadata would hold more than %d keys", MaxMetadataKeys)
	}
	return nil
}

// flag turns an optional string into the scripts' ('1', value) / ('0', ”).
func flag(s *string) (string, string) {
	if s == nil {
		return "0", ""
	}
	return "1", *s
}
