package usage

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"

	"github.com/agentsidecar/agentsidecar/pricing"
	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// Store is the module's writes over the shared session runner: usage
// counting and the end of a session, each one script.
type Store struct {
	*sessionstore.Store
	// Limits bound the model names kept; zero fields take the defaults.
	Limits Limits
}

// Limits bound what model names cost in Redis (Config holds their settings).
type Limits struct {
	// SessionModels: distinct model names per session record; later new
	// names count as "other".
	SessionModels int
	// DayModels: distinct model names per day in the per-model totals (per
	// bucket on Cluster); later new names count as "other".
	DayModels int
	// Days: how many UTC days of per-model totals are kept.
	Days int
}

// Defaults of Limits (and of their settings).
const (
	DefaultSessionModels = 50
	DefaultDayModels     = 200
	DefaultDays          = 31
)

func (l Limits) orDefaults() Limits {
	if l.SessionModels <= 0 {
		l.SessionModels = DefaultSessionModels
	}
	if l.DayModels <= 0 {
		l.DayModels = DefaultDayModels
	}
	if l.Days <= 0 {
		l.Days = DefaultDays
	}
	return l
}

// Usage is one LLM call to add to a session.
type Usage struct {
	Model       string
	TokensIn    int64
	TokensOut   int64
	CostNanoUSD int64
	Failed      bool
	// IdempotencyKey makes a retried post count once per session ("" = none).
	IdempotencyKey string
	// Result is what the caller answers; a repeat of the key gets it back.
	Result []byte
}

// AddUsage counts u in the session record (created running if absent), its
// per-model breakdown, the all-time totals and the day's per-model totals,
// in one script. For a repeated idempotency key it counts nothing and
// returns the first result with Created == false. A sum that would pass
// 9e18 is a usage_overflow conflict, a hand-written key of the wrong type a
// key_wrong_type conflict; both write nothing.
func (s *Store) AddUsage(ctx context.Context, user, session string, u Usage) (sessionstore.Stored, error) {
	failed := "0"
	if u.Failed {
		failed = "1"
	}
	l := s.Limits.orDefaults()
	r, err := s.Run(ctx, luaScripts.Usage, user, session, u.Model,
		strconv.FormatInt(u.TokensIn, 10), strconv.FormatInt(u.TokensOut, 10),
		strconv.FormatInt(u.CostNanoUSD, 10), failed, u.IdempotencyKey, string(u.Result),
		strconv.Itoa(l.SessionModels), strconv.Itoa(l.DayModels), strconv.Itoa((l.Days+1)*86400))
	if err != nil {
		return sessionstore.Stored{}, err
	}
	return sessionstore.StoredOf(r, u.Result)
}

// CostByModel is the per-model usage of the last days UTC days (1 to
// Limits.Days; 0 = all kept days), most expensive first. Each day's hash
// holds at most Limits.DayModels names, but a window of days (and the 64
// buckets of a Cluster) may hold more: the answer keeps the DayModels most
// expensive and counts the rest as "other", so its size is bounded too and
// its sums stay exact.
func (s *Store) CostByModel(ctx context.Context, days int) ([]sessionstore.ModelTotals, error) {
	l := s.Limits.orDefaults()
	if days <= 0 {
		days = l.Days
	}
	rows, err := s.Store.CostByModel(ctx, days)
	if err != nil {
		return nil, err
	}
	return foldModels(rows, l.DayModels), nil
}

// foldModels keeps the n first named rows of rows (sorted most expensive
// first) and adds the others into the "other" row, which it places by cost.
func foldModels(rows []sessionstore.ModelTotals, n int) []sessionstore.ModelTotals {
	other, folded := sessionstore.ModelTotals{Model: pricing.Other}, false
	kept := make([]sessionstore.ModelTotals, 0, min(len(rows), n+1))
	for _, r := range rows {
		if r.Model != pricing.Other && len(kept) < n {
			kept = append(kept, r)
			continue
		}
		folded = true
		other.TokensIn += r.TokensIn
		other.TokensOut += r.TokensOut
		other.CostNanoUSD += r.CostNanoUSD
		other.Calls += r.Calls
		other.Errors += r.Errors
	}
	if !folded {
		return kept
	}
	at := sort.Search(len(kept), func(i int) bool {
		if kept[i].CostNanoUSD != other.CostNanoUSD {
			return kept[i].CostNanoUSD < other.CostNanoUSD
		}
		return kept[i].Model > other.Model
	})
	return slices.Insert(kept, at, other)
}

// End marks the session completed or failed. It returns ended == false when
// it had already ended with that status; a session_ended conflict when with
// the other; a not-found refusal for no such session.
// summary (nil = none) is stored as the session's human summary.
func (s *Store) End(ctx context.Context, user, session, status string, summary *string) (ended bool, err error) {
	hasSummary, text := "0", ""
	if summary != nil {
		hasSummary, text = "1", *summary
	}
	r, err := s.Run(ctx, luaScripts.End, user, session, status, hasSummary, text)
	if errors.Is(err, redisstore.ErrNotFound) {
		return false, redisstore.NotFound("no session %s/%s", user, session)
	}
	if err != nil {
		return false, err
	}
	return !r.Dup, nil
}
