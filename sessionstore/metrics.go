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
	for _, c := range []prometheus.Collector{sessionsStarted, sessionsEnded} {
		if err := reg.Register(c); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
			return err
		}
	}
	return nil
}

// CountStarted counts a session that a write through this sidecar started
// (a script reported that it created the record).
func CountStarted() { sessionsStarted.Inc() }

// EndReasons are the values of end_reason, the label of
// sidecar_sessions_ended_total.
var EndReasons = []string{"completed", "failed", "split", "auto_closed"}

// sessionsEnded counts, per process, the sessions ended through this
// sidecar by end_reason (every reason's series exists from the start).
var sessionsEnded = func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecar_sessions_ended_total",
		Help: "Sessions ended through this sidecar, by end_reason (completed, failed, split, auto_closed).",
	}, []string{"end_reason"})
	for _, r := range EndReasons {
		c.WithLabelValues(r)
	}
	return c
}()

// CountEnded counts a session ended through this sidecar with reason.
func CountEnded(reason string) { sessionsEnded.WithLabelValues(reason).Inc() }
