// Package clock is where the daemon's loops read time: the node's
// indexer, lifecycle, expunger, session ingest and git checks, and the
// mesh's anti-entropy, retries and waits all take a Clock, so that a test
// or a simulation drives them by moving a Fake rather than by sleeping.
// I/O deadlines (streams, dials, HTTP) and the durations that logs report
// stay on the system's clock.
//
// The clock and its fake are clockwork's (github.com/jonboulle/clockwork):
// a Fake fires timers and tickers as Advance reaches them, and
// BlockUntilContext waits until a loop is waiting on it.
package clock

import (
	"time"

	"github.com/jonboulle/clockwork"

	"context"
)

type (
	// Clock tells the time and makes timers and tickers.
	Clock = clockwork.Clock
	// Timer is a Clock's time.Timer.
	Timer = clockwork.Timer
	// Ticker is a Clock's time.Ticker.
	Ticker = clockwork.Ticker
	// Fake is a Clock that moves only when it is advanced.
	Fake = clockwork.FakeClock
)

// System is package time's clock.
func System() Clock { return clockwork.NewRealClock() }

// NewFake returns a Fake that reads at.
func NewFake(at time.Time) *Fake { return clockwork.NewFakeClockAt(at) }

// WithNow is package time's timers with now as the time: a clock a test
// sets (a date long past, a skew between machines) while the loops run at
// the system's pace.
func WithNow(now func() time.Time) Clock { return nowClock{clockwork.NewRealClock(), now} }

type nowClock struct {
	clockwork.Clock
	now func() time.Time
}

func (c nowClock) Now() time.Time                  { return c.now() }
func (c nowClock) Since(t time.Time) time.Duration { return c.now().Sub(t) }
func (c nowClock) Until(t time.Time) time.Duration { return t.Sub(c.now()) }

// Sleep waits d on c, or until ctx ends: then it returns ctx's error.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
