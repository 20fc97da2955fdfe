package usage

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/pricing"
	"github.com/agentsidecar/agentsidecar/sessionstore"
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

// The cost-by-model answer keeps the n most expensive names and adds the
// rest (and an "other" row already there) into "other", placed by cost.
func TestFoldModels(t *testing.T) {
	rows := []sessionstore.ModelTotals{
		{Model: "a", CostNanoUSD: 50, Calls: 1}, {Model: "other", CostNanoUSD: 40, Calls: 2},
		{Model: "b", CostNanoUSD: 30, Calls: 3}, {Model: "c", CostNanoUSD: 20, Calls: 4, TokensIn: 7}, {Model: "d", CostNanoUSD: 10, Calls: 5, Errors: 1},
	}
	got := foldModels(rows, 2)
	want := []sessionstore.ModelTotals{
		{Model: "other", CostNanoUSD: 70, Calls: 11, TokensIn: 7, Errors: 1}, {Model: "a", CostNanoUSD: 50, Calls: 1}, {Model: "b", CostNanoUSD: 30, Calls: 3},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("foldModels(rows, 2) = %+v, want %+v", got, want)
	}
	if got := foldModels(rows[2:], 5); !slices.Equal(got, rows[2:]) {
		t.Fatalf("nothing to fold: %+v", got)
	}
}
