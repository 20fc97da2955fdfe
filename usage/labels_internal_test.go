package usage

import (
	"errors"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/pricing"
)

// METRICS_MODEL_LABELS takes priced names only (the label is their family).
func TestMetricModelLabelsMustBePriced(t *testing.T) {
	l, err := newLabeler(pricing.Default(), []string{"openai/gpt-4o-2024-08-06"}, 0)
	if err != nil || l.label("GPT-4o") != "gpt-4o" || l.label("acme") != pricing.Other {
		t.Fatalf("newLabeler: %v", err)
	}
	_, err = newLabeler(pricing.Default(), []string{"gpt-4o", "acme-llm"}, 0)
	var ce *envconf.Error
	if !errors.As(err, &ce) || ce.Var != "METRICS_MODEL_LABELS" {
		t.Fatalf("an unpriced name: %v, want an error naming METRICS_MODEL_LABELS", err)
	}
}
