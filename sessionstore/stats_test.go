package sessionstore_test

import (
	"math"
	"testing"

	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// NanoUSD never wraps: an amount no int64 holds clamps to the maximum
// instead of turning negative ($0.01 x 2^40 tokens is 1.1e19 nano-USD).
func TestNanoUSDClamps(t *testing.T) {
	tests := []struct {
		usd  float64
		want int64
	}{
		{0.00036, 360_000},
		{1.4999999999999999e-05, 15_000},
		{0.01 * (1 << 40), sessionstore.MaxNanoUSD},
		{math.MaxInt64 / 1e9, sessionstore.MaxNanoUSD},
		{math.Inf(1), sessionstore.MaxNanoUSD},
		{-0.5, 0},
		{math.Inf(-1), 0},
		{math.NaN(), 0},
	}
	for _, tc := range tests {
		if got := sessionstore.NanoUSD(tc.usd); got != tc.want {
			t.Errorf("NanoUSD(%v) = %d, want %d", tc.usd, got, tc.want)
		}
	}
}
