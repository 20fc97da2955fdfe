package sessionstore

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// sessionsStarted counts, per process, the sessions a write through this
// sidecar started (whichever module wrote first). StoredOf records it
// where the scripts report it.
var sessionsStarted = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "sidecar_sessions_started_total",
	Help: "Sessions started (their record created) by a write through this sidecar.",
})

// registerCounters registers the shared session counters with reg.
func registerCounters(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	if err := reg.Register(sessionsStarted); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return err
	}
	return nil
}

// CountStarted counts a session that a write through this sidecar started
// (a script reported that it created the record).
func CountStarted() { sessionsStarted.Inc() }

// EndReasons are the values of end_reason, the label of
// sidecar_sessions_ended_total.
var EndReasons = []string{"completed", "failed", "split", "auto_closed"}

// newEnded is sidecar_sessions_ended_total of one host (every reason's
// series exists from the start).
func newEnded() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecar_sessions_ended_total",
		Help: "Sessions ended through this sidecar, by end_reason (completed, failed, split, auto_closed).",
	}, []string{"end_reason"})
	for _, r := range EndReasons {
		c.WithLabelValues(r)
	}
	return c
}

// CountEnded counts a session ended through this sidecar with reason (in
// the host's sidecar_sessions_ended_total; a Store made by New counts
// nothing).
func (s *Store) CountEnded(reason string) {
	if s.ended != nil {
		s.ended.WithLabelValues(reason).Inc()
	}
}
