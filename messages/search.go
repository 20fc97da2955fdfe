package messages

import (
	"errors"
	"net/http"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Limits of a user search.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
)

// searchUser ranks the user's messages across all of their sessions
// (GET /v1/users/{u}/search).
func (m *Module) searchUser(w http.ResponseWriter, r *http.Request) error {
	user, err := sidecar.PathID(r, "user_id")
	if err != nil {
		return err
	}
	limit, err := sidecar.QueryInt(r, "limit", DefaultSearchLimit, 1, MaxSearchLimit)
	if err != nil {
		return err
	}
	client, err := m.store.Conn().Client()
	if err != nil {
		return err
	}
	l := redisstore.Layout{Cluster: m.store.Conn().Cluster()}
	res, err := search.Find(r.Context(), client, l, user, "", r.URL.Query().Get("q"), limit)
	if errors.Is(err, search.ErrNoTerms) {
		return sidecar.BadRequest("invalid_query", "q must hold at least one searchable word (stop words such as \"the\" are not indexed)")
	}
	if err != nil {
		return err
	}
	sidecar.WriteJSON(w, http.StatusOK, struct {
		Results []search.Result `json:"results"`
	}{res})
	return nil
}
