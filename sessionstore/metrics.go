package sessionstore

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// sessionsStarted counts, per process, the sessions a write through this
// sidecar started (whichever module wrote first). StoredReply records it
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
