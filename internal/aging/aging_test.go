package aging

import (
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
)

// TestDecayHalvesByWholeDays: confidence halves every half-life, holds
// still within a day, never grows for a time in the future, and evergreen
// memories keep theirs.
func TestDecayHalvesByWholeDays(t *testing.T) {
	updated := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const halfLife = 10 * 24 * time.Hour
	for _, tc := range []struct {
		after time.Duration
		want  float64
	}{
		{0, 1},
		{23 * time.Hour, 1},
		{-48 * time.Hour, 1},
		{halfLife, 0.5},
		{halfLife + 23*time.Hour, 0.5},
		{2 * halfLife, 0.25},
	} {
		if got := Decay(false, updated, updated.Add(tc.after), halfLife); got != tc.want {
			t.Errorf("after %v: decay %v, want %v", tc.after, got, tc.want)
		}
	}
	if got := Decay(true, updated, updated.Add(5*halfLife), halfLife); got != 1 {
		t.Errorf("evergreen: decay %v, want 1", got)
	}
}

// TestMaturityFromReads: a memory read 3 times is established, 10 times
// proven, and ranks higher with each step.
func TestMaturityFromReads(t *testing.T) {
	for reads, want := range map[int]api.Maturity{0: api.MaturityCandidate, 2: api.MaturityCandidate, 3: api.MaturityEstablished,
		9: api.MaturityEstablished, ProvenReads: api.MaturityProven, 1000: api.MaturityProven} {
		if got := Maturity(reads); got != want {
			t.Errorf("%d reads: %s, want %s", reads, got, want)
		}
	}
	if !(Weight(api.MaturityCandidate) < Weight(api.MaturityEstablished) && Weight(api.MaturityEstablished) < Weight(api.MaturityProven)) {
		t.Errorf("weights do not rise with maturity: %v", weights)
	}
}
