package search

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/memmesh/memmesh/model"
)

// TestUpdatedWindowMatchesExactly checks the since/until window against a
// direct filter of the update times: memories on both sides of each end,
// at the ends themselves, at midnights and full hours and a nanosecond
// from them, in the days between and far outside, for windows of random
// ends.
func TestUpdatedWindowMatchesExactly(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	ix := openTest(t)

	midnight := now.Truncate(24 * time.Hour)
	var times []time.Time
	for d := -4; d <= 4; d++ {
		m := midnight.Add(time.Duration(d) * 24 * time.Hour)
		h := m.Add(time.Duration(rng.IntN(24)) * time.Hour)
		times = append(times, m, m.Add(-time.Nanosecond), m.Add(time.Nanosecond), h, h.Add(-time.Nanosecond), h.Add(time.Nanosecond),
			m.Add(time.Duration(rng.Int64N(int64(24*time.Hour)))))
	}
	times = append(times, minTime, midnight.Add(-400*24*time.Hour), midnight.Add(400*24*time.Hour))
	var ms []model.Memory
	updated := make(map[string]time.Time)
	for i, at := range times {
		id := fmt.Sprintf("m%d", i)
		updated[id] = at
		ms = append(ms, mem(id, "Window note", "A note about the window.", withUpdated(at)))
	}
	apply(t, ix, ms...)

	// The ends: the memories' own times (an end equal to a memory's time),
	// and random times within the days around them.
	pick := func() time.Time {
		if rng.IntN(2) == 0 {
			return times[rng.IntN(len(times))]
		}
		at := midnight.Add(time.Duration(rng.Int64N(int64(10*24*time.Hour))) - 5*24*time.Hour)
		if rng.IntN(2) == 0 {
			at = at.Truncate(time.Hour) // a full hour
		}
		return at
	}
	for range 500 {
		var q Query
		switch rng.IntN(4) {
		case 0:
			q.Since = pick()
		case 1:
			q.Until = pick()
		default:
			q.Since, q.Until = pick(), pick()
			if q.Since.After(q.Until) {
				q.Since, q.Until = q.Until, q.Since
			}
		}
		q.Limit = len(times)
		var want []string
		for id, at := range updated {
			if (q.Since.IsZero() || !at.Before(q.Since)) && (q.Until.IsZero() || at.Before(q.Until)) {
				want = append(want, id)
			}
		}
		if got := ids(search(t, ix, q)); !sameSet(got, want) {
			t.Fatalf("since %v until %v: hits %v, want %v", q.Since, q.Until, got, want)
		}
	}
}
