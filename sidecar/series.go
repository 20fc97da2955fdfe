package sidecar

import "github.com/prometheus/client_golang/prometheus"

// NewCounter, NewCounterVec, NewGauge and NewHistogramVec declare a series
// in one line: its name, its help text (docs/metrics.md lists them all),
// the histogram's buckets, the labels. Register them as Collector says.
func NewCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// NewCounterVec is a counter with labels: see NewCounter.
func NewCounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// NewGauge is a gauge: see NewCounter.
func NewGauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// NewHistogramVec is a histogram with labels: see NewCounter.
func NewHistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}
