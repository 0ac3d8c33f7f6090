// Package bulkgc raises the Go collector's target while bulk work runs: a
// catch-up from a peer or an import allocates at a high rate over a live
// heap that hardly grows, so at the default target (GOGC=100) the
// collector runs every few tens of megabytes and takes about a tenth of
// the work's CPU. At twice the target it runs half as often. The heap
// may then grow to three times what is live instead of twice, but only
// while the bulk work runs; afterwards the previous target holds again,
// so an idle or serving process keeps the heap it had. Closed Automerge
// documents may hold more C memory meanwhile before a collection is forced
// for it (crdt.SetBulk): most of a catch-up's collections were forced.
//
// A target set by the user (GOGC in the environment, or the collector
// switched off) is left alone when it is already as high.
package bulkgc

import (
	"runtime/debug"
	"sync"

	"github.com/memmesh/memmesh/crdt"
)

// Percent is the collector's target (GOGC) while bulk work runs.
const Percent = 200

var (
	mu     sync.Mutex
	active int // bulk scopes open
	saved  int // the target before the first of them
)

// Begin raises the collector's target to Percent, and tells crdt that bulk
// work runs, until every scope begun has ended; call the returned
// function, once, when the bulk work ends.
// Scopes nest and may overlap across goroutines.
func Begin() (end func()) {
	mu.Lock()
	if active == 0 {
		saved = debug.SetGCPercent(Percent)
		if saved < 0 || saved > Percent {
			debug.SetGCPercent(saved) // off, or higher already: keep it
		}
		crdt.SetBulk(true)
	}
	active++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if active--; active == 0 {
				debug.SetGCPercent(saved)
				crdt.SetBulk(false)
			}
		})
	}
}
