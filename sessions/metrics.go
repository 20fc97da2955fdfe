package sessions

import (
	"github.com/agentsidecar/agentsidecar/sidecar"
	"github.com/prometheus/client_golang/prometheus"
)

// The module's event counters, per process (a sum across pods is the
// fleet's total), recorded where the scripts report what happened.
var (
	entriesAppended = sidecar.NewCounter("sidecar_session_entries_appended_total", "Q&A entries appended (retried appends of a stored qa_id not counted).")
	feedback        = sidecar.NewCounterVec("sidecar_session_feedback_total", "Feedback scores set on entries, by score (1-5).", "score")
	indexerDropped  = sidecar.NewCounter("sidecar_session_search_catchups_dropped_total", "Sessions not queued for indexing the entries another program appended, the queue being full (indexed at a later touch).")
	indexSteps      = sidecar.NewCounterVec("sidecar_session_index_steps_total", "Bounded steps of building a session's id index after another writer (Cognee) rewrote or grew the list, by index (qa, context; search: entries put into the relevance search index).", "index")
)

// Collectors implements sidecar.Collector: the counters, every score and
// index at zero.
func (m *Module) Collectors() []prometheus.Collector {
	for _, s := range []string{"1", "2", "3", "4", "5"} {
		feedback.WithLabelValues(s)
	}
	for _, i := range []string{"qa", "context", "search"} {
		indexSteps.WithLabelValues(i)
	}
	return []prometheus.Collector{entriesAppended, feedback, indexSteps, indexerDropped}
}

// countFeedback counts a feedback_score set by an entry update.
func countFeedback(fields [][2]string) {
	for _, f := range fields {
		if f[0] == "feedback_score" && len(f[1]) == 1 && f[1][0] >= '1' && f[1][0] <= '5' {
			feedback.WithLabelValues(f[1]).Inc()
		}
	}
}

var (
	_ sidecar.Collector = (*Module)(nil)
	_ sidecar.Closer    = (*Module)(nil)
)
