package mesh

import "time"

// Clock is where the mesh's scheduling reads time: the anti-entropy and
// retry tickers, the wait between membership joins, the interval between
// pulls back, and the times it keeps of its peers and invites, so that a
// test or a simulation can drive it. I/O deadlines (streams, dials) and
// memberlist's own timers stay on the system's clock.
type Clock interface {
	Now() time.Time
	// NewTicker returns a ticker that fires every d.
	NewTicker(d time.Duration) Ticker
	// After fires once, d from now.
	After(d time.Duration) <-chan time.Time
}

// Ticker is a Clock's time.Ticker.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock is package time's clock, with now in place of time.Now when
// it is not nil (a node's clock, which its tests move).
func SystemClock(now func() time.Time) Clock {
	if now == nil {
		now = time.Now
	}
	return systemClock{now}
}

type systemClock struct{ now func() time.Time }

func (c systemClock) Now() time.Time                         { return c.now() }
func (c systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (c systemClock) NewTicker(d time.Duration) Ticker       { return systemTicker{time.NewTicker(d)} }

type systemTicker struct{ t *time.Ticker }

func (t systemTicker) C() <-chan time.Time { return t.t.C }
func (t systemTicker) Stop()               { t.t.Stop() }
