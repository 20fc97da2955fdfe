package redisstore

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Session event counters, per process (a sum across pods is the fleet's
// total). The store records them where the scripts report what happened, so
// every module that writes sessions counts alike. The host registers them.
var (
	sessionsStarted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sidecar_sessions_started_total",
		Help: "Sessions started (their record created) by a write through this sidecar.",
	})
	entriesAppended = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sidecar_session_entries_appended_total",
		Help: "Q&A entries appended (retried appends of a stored qa_id not counted).",
	})
	feedback = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sidecar_session_feedback_total",
		Help: "Feedback scores set on entries, by score (1-5).",
	}, []string{"score"})
)

// Collectors returns the session event counters, every score at zero.
func Collectors() []prometheus.Collector {
	for _, s := range []string{"1", "2", "3", "4", "5"} {
		feedback.WithLabelValues(s)
	}
	return []prometheus.Collector{sessionsStarted, entriesAppended, feedback}
}

// countFeedback counts a feedback_score set by an entry update.
func countFeedback(fields [][2]string) {
	for _, f := range fields {
		if f[0] == "feedback_score" && len(f[1]) == 1 && f[1][0] >= '1' && f[1][0] <= '5' {
			feedback.WithLabelValues(f[1]).Inc()
		}
	}
}
