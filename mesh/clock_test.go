package mesh

import (
	"context"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/clock"
)

// newFakeClock is the clock of a mesh test: it moves only when advanced.
func newFakeClock() *clock.Fake { return clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

// waitPending waits until n timers, tickers or waits of c are pending: a
// goroutine reached the wait that the test then advances the clock past.
func waitPending(t *testing.T, c *clock.Fake, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("%d waits never pending: %v", n, err)
	}
}
