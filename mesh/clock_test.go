package mesh

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock that moves only when Advance is called: tickers
// and waits fire as the time they wait for is reached.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*fakeTicker
	waits   []fakeWait
}

type fakeTicker struct {
	clock   *fakeClock
	c       chan time.Time
	every   time.Duration
	next    time.Time
	stopped bool
}

type fakeWait struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(d time.Duration) Ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTicker{clock: c, c: make(chan time.Time, 1), every: d, next: c.now.Add(d)}
	c.tickers = append(c.tickers, t)
	return t
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := fakeWait{at: c.now.Add(d), c: make(chan time.Time, 1)}
	c.waits = append(c.waits, w)
	return w.c
}

// Advance moves the clock by d, firing what falls due: a ticker that
// falls behind drops ticks, as time.Ticker does.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		for !t.stopped && !t.next.After(c.now) {
			select {
			case t.c <- t.next:
			default:
			}
			t.next = t.next.Add(t.every)
		}
	}
	waits := c.waits[:0]
	for _, w := range c.waits {
		if w.at.After(c.now) {
			waits = append(waits, w)
			continue
		}
		w.c <- w.at
	}
	c.waits = waits
}

func (t *fakeTicker) C() <-chan time.Time { return t.c }

func (t *fakeTicker) Stop() {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	t.stopped = true
}

// pending is how many waits (After) have not fired yet.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waits)
}

// waitPending waits until n waits are pending: a goroutine reached the
// wait that the test then advances the clock past.
func waitPending(t *testing.T, c *fakeClock, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.pending() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waits pending, want %d", c.pending(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
