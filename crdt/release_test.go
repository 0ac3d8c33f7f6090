package crdt

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/testwait"
)

// rss returns the resident set size of the process.
func rss(tb testing.TB) int64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		tb.Skipf("no /proc/self/statm: %v", err)
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		tb.Fatalf("parse statm %q: %v", b, err)
	}
	return resident * int64(os.Getpagesize())
}

// TestCloseReleasesMemory churns through documents with the Go collector
// switched off, so that only the collections Close forces run the
// finalizers that free Automerge's C memory. Without them RSS grows by
// about 200 KiB per iteration, without end; with them it levels off once
// the C heap has grown to hold what accumulates between collections.
func TestCloseReleasesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	const (
		iterations = 6000
		maxGrowth  = 512 << 20 // over the whole loop
		maxLate    = 128 << 20 // in the second half, over the first half's peak
	)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	in := testMemory()
	in.Content = strings.Repeat("Pebble batches are synced. ", 80) // ~2 KiB
	start, base := forcedGCs.Load(), rss(t)
	var firstPeak, peak int64
	for i := range iterations {
		d, err := NewMemoryDoc(actorA, in)
		must(t, err)
		_, err = d.AppendRevision(in.Content+" Edited.", "device-a", "", time.Now())
		must(t, err)
		must(t, d.Commit("edit"))
		loaded, err := LoadMemoryDoc(actorB, d.Save())
		must(t, err)
		_, err = loaded.Materialize()
		must(t, err)
		d.Close()
		loaded.Close()
		if i%100 == 0 {
			peak = max(peak, rss(t))
		}
		if i == iterations/2 {
			firstPeak = peak
		}
	}
	forced := forcedGCs.Load() - start
	t.Logf("%d iterations: %d forced collections; RSS grew %d MiB in the first half, %d MiB more in the second",
		iterations, forced, (firstPeak-base)>>20, (peak-firstPeak)>>20)
	if forced < 2 {
		t.Errorf("forced %d collections, want several", forced)
	}
	if peak-base > maxGrowth {
		t.Errorf("RSS grew by %d MiB, want at most %d MiB", (peak-base)>>20, maxGrowth>>20)
	}
	if peak-firstPeak > maxLate {
		t.Errorf("RSS grew by %d MiB in the second half, want at most %d MiB: memory is not released", (peak-firstPeak)>>20, maxLate>>20)
	}
}

// TestCollectionsThatRanAreNotForcedAgain passes the threshold twice with
// the collector switched off: the first time no collection ran since the
// counter started, so one is forced; the second time one ran meanwhile,
// so none is.
func TestCollectionsThatRanAreNotForcedAgain(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	start := restartCount(t)
	noteGarbage(gcThreshold)
	waitIdle(t)
	if got := forcedGCs.Load() - start; got != 1 {
		t.Fatalf("no collection since the counter started: %d forced, want 1", got)
	}
	runtime.GC() // as the collector does by itself under load
	noteGarbage(gcThreshold)
	waitIdle(t)
	if got := forcedGCs.Load() - start; got != 1 {
		t.Fatalf("a collection ran meanwhile: %d forced in all, want still 1", got)
	}
	noteGarbage(gcThreshold)
	waitIdle(t)
	if got := forcedGCs.Load() - start; got != 2 {
		t.Fatalf("none ran since: %d forced in all, want 2", got)
	}
}

// TestBulkWorkForcesFewerCollections passes gcThreshold with the
// collector switched off: outside bulk work a collection is forced; during
// it none is until bulkGCThreshold.
func TestBulkWorkForcesFewerCollections(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer SetBulk(false)
	forced := func(bulkWork bool, n int64) int64 {
		t.Helper()
		SetBulk(bulkWork)
		start := restartCount(t)
		noteGarbage(n)
		waitIdle(t)
		return forcedGCs.Load() - start
	}
	if got := forced(false, gcThreshold); got != 1 {
		t.Errorf("outside bulk work, at gcThreshold: %d forced, want 1", got)
	}
	if got := forced(true, gcThreshold); got != 0 {
		t.Errorf("during bulk work, at gcThreshold: %d forced, want 0", got)
	}
	if got := forced(true, bulkGCThreshold); got != 1 {
		t.Errorf("during bulk work, at bulkGCThreshold: %d forced, want 1", got)
	}
}

// waitIdle waits until no forced collection runs.
func waitIdle(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(testwait.Limit); collecting.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a forced collection did not end")
		}
	}
}

// restartCount waits until no forced collection runs, restarts the count
// of garbage as after a collection, and returns the forced collections so
// far.
func restartCount(t *testing.T) int64 {
	t.Helper()
	waitIdle(t)
	garbage.Store(0)
	cycles.Store(completedGCs())
	return forcedGCs.Load()
}
