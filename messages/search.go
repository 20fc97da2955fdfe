package messages

import (
	"errors"
	"net/http"

	"github.com/agentsidecar/agentsidecar/search"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Limits of a user search.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
)

// searchUser ranks the user's messages and Q&A entries across all of
// their sessions (GET /v1/users/{u}/search). Under SEARCH_INDEX=on-demand
// the user's first search makes the user's index and builds it (newest
// sessions first, for at most search.SearchBudget; the background worker
// goes on), answering "index": "building" until it is built.
func (m *Module) searchUser(w http.ResponseWriter, r *http.Request) error {
	user, err := sidecar.PathID(r, "user_id")
	if err != nil {
		return err
	}
	limit, err := sidecar.QueryInt(r, "limit", DefaultSearchLimit, 1, MaxSearchLimit)
	if err != nil {
		return err
	}
	if len(search.Query(r.URL.Query().Get("q"))) == 0 {
		return sidecar.BadRequest("invalid_query", "q must hold at least one searchable word (stop words such as \"the\" are not indexed)")
	}
	cov := m.index.Prepare(r.Context(), user, "")
	res, err := m.index.Find(r.Context(), user, "", r.URL.Query().Get("q"), limit)
	if errors.Is(err, search.ErrNoTerms) {
		return sidecar.BadRequest("invalid_query", "q must hold at least one searchable word (stop words such as \"the\" are not indexed)")
	}
	if err != nil {
		return err
	}
	sidecar.WriteJSON(w, http.StatusOK, struct {
		Results []search.Result `json:"results"`
		// while a build is partial: "building", and the time back to
		// which the user's sessions are covered (by last activity)
		Index        string `json:"index,omitempty"`
		CoveredSince string `json:"index_covered_since,omitempty"`
	}{res, cov.Field(), cov.SinceField()})
	return nil
}
