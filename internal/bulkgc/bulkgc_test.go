package bulkgc

import (
	"runtime/debug"
	"testing"
)

// current returns the collector's target without changing it.
func current() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

func TestBeginRaisesUntilEveryScopeEnds(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	end1 := Begin()
	if got := current(); got != Percent {
		t.Fatalf("during bulk work: GOGC %d, want %d", got, Percent)
	}
	end2 := Begin()
	end1()
	end1() // a second call is a no-op
	if got := current(); got != Percent {
		t.Fatalf("one scope still open: GOGC %d, want %d", got, Percent)
	}
	end2()
	if got := current(); got != 100 {
		t.Fatalf("after bulk work: GOGC %d, want 100", got)
	}
}

func TestBeginKeepsAHigherOrDisabledTarget(t *testing.T) {
	for _, user := range []int{-1, 400} {
		func() {
			defer debug.SetGCPercent(debug.SetGCPercent(user))
			end := Begin()
			if got := current(); got != user {
				t.Errorf("GOGC %d during bulk work: got %d, want it kept", user, got)
			}
			end()
			if got := current(); got != user {
				t.Errorf("GOGC %d after bulk work: got %d", user, got)
			}
		}()
	}
}

func TestBeginRaisesALowerTarget(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	end := Begin()
	if got := current(); got != Percent {
		t.Fatalf("GOGC 50 during bulk work: got %d, want %d", got, Percent)
	}
	end()
	if got := current(); got != 50 {
		t.Fatalf("after bulk work: GOGC %d, want 50", got)
	}
}
