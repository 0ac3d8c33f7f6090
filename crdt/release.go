package crdt

import (
	"runtime"
	"runtime/metrics"
	"sync/atomic"
)

// Estimates of the C memory that Automerge documents and the results of
// calls on them hold, measured with automerge-go on linux/amd64. They are
// rough (within a factor of two for typical memories); their only use is
// to decide when to force a collection.
const (
	docOverhead     = 32 << 10 // a nearly empty document, and the results of making or loading it
	opCost          = 1 << 10  // one write operation and its result
	readCost        = 4 << 10  // the result of reading all values of one map
	writtenByteCost = 2        // per byte of a written string
	loadedByteCost  = 4        // per byte of a loaded document (compressed)
)

// gcThreshold is how much estimated C memory closed documents may hold
// before a collection is forced.
const gcThreshold = 64 << 20

// bulkGCThreshold replaces gcThreshold while bulk work runs (SetBulk). A
// catch-up from a peer loads and closes a document for every memory it
// receives (about 60 KB of C memory each): at gcThreshold it forced a
// collection every thousand memories, half of all collections, each
// marking the whole Go heap. Four times the threshold cut the catch-up's
// CPU by a tenth, for up to 192 MB more C memory while the work runs.
const bulkGCThreshold = 4 * gcThreshold

var (
	// garbage is the estimated C memory of closed documents and saved
	// buffers whose finalizers have not run since the counter was last
	// reset.
	garbage atomic.Int64
	// collecting is set while a forced collection runs.
	collecting atomic.Bool
	// forcedGCs counts forced collections.
	forcedGCs atomic.Int64
	// cycles is the number of completed collections when garbage was
	// last reset.
	cycles atomic.Uint64
	// bulk is set while bulk work runs (SetBulk).
	bulk atomic.Bool
)

// SetBulk tells whether bulk work (a catch-up, an import) runs: while it
// does, closed documents may hold bulkGCThreshold of C memory before a
// collection is forced instead of gcThreshold.
func SetBulk(on bool) { bulk.Store(on) }

// threshold returns the C memory closed documents may hold now before a
// collection is forced.
func threshold() int64 {
	if bulk.Load() {
		return bulkGCThreshold
	}
	return gcThreshold
}

// noteGarbage adds n bytes of C memory that is now unreachable but only
// freed by a finalizer. When the total passes threshold() it is reset, and
// unless a collection completed since the last reset (whose finalizers
// free what was closed before it: under a steady load the collector runs
// often enough by itself) it starts one runtime.GC in the background,
// unless one is already running: the Go collector cannot see C memory,
// so without this it would not run soon enough to keep the C heap small.
func noteGarbage(n int64) {
	if garbage.Add(n) < threshold() || !collecting.CompareAndSwap(false, true) {
		return
	}
	garbage.Store(0)
	if c := completedGCs(); cycles.Swap(c) != c {
		collecting.Store(false)
		return
	}
	forcedGCs.Add(1)
	go func() {
		defer collecting.Store(false)
		runtime.GC()
		cycles.Store(completedGCs())
	}()
}

// completedGCs returns the number of collections completed since the
// process started.
func completedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
