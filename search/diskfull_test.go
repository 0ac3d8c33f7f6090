package search

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/tmpfs"
	"github.com/memmesh/memmesh/model"
)

// openDir opens the index in dir; it is closed before the test's
// filesystem is unmounted.
func openDir(t *testing.T, dir string) *Index {
	t.Helper()
	ix, err := Open(dir, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// persistAttempts returns how many times scorch's persister has started
// its loop: once per attempt to write, and once per batch to wait for.
func persistAttempts(t *testing.T, ix *Index) uint64 {
	t.Helper()
	stats, _ := ix.idx.StatsMap()["index"].(map[string]any)
	n, ok := stats["TotPersistLoopBeg"].(uint64)
	if !ok {
		t.Fatalf("no TotPersistLoopBeg in the index stats: %v", stats)
	}
	return n
}

// TestFullDiskUnderIndex fills the disk under an index: the batches stay
// searchable, scorch's persister waits between its failing attempts
// instead of merging and failing again every second, Close does not wait
// for it, and once space is back the data reaches the disk.
func TestFullDiskUnderIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("long (it watches the persister for seconds): ./test runs it, ./test -short does not")
	}
	dir := filepath.Join(tmpfs.Mount(t, "8m"), "index")
	ix := openDir(t, dir)
	filler := filepath.Join(filepath.Dir(dir), "filler")
	tmpfs.Fill(t, filler)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	const batches = 20
	for b := range batches {
		var batch []model.Memory
		for i := range 3 {
			var words strings.Builder
			for range 500 {
				fmt.Fprintf(&words, " w%x", rng.Uint64())
			}
			batch = append(batch, mem(fmt.Sprintf("m%d-%d", b, i), "", fmt.Sprintf("full disk zq%dq%d%s", b, i, words.String())))
		}
		if err := ix.Apply(batch, nil, uint64(b+1)); err != nil {
			t.Fatalf("Apply on a full disk: %v", err)
		}
	}
	if res := search(t, ix, Query{Text: "zq19q2"}); len(res.Hits) != 1 {
		t.Fatalf("search on a full disk found %d, want 1", len(res.Hits))
	}

	// Without a pause the persister tries about once a second (its nap).
	deadline := time.Now().Add(time.Minute)
	for !ix.writeFailing.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no failed write reported within a minute on a full disk")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := persistAttempts(t, ix)
	time.Sleep(4 * time.Second)
	if n := persistAttempts(t, ix) - before; n > 1 {
		t.Fatalf("the persister tried %d times in 4 s on a full disk, want it to wait %s", n, failurePause)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	persisted := ix.persisted
	select {
	case <-persisted:
	case <-time.After(time.Minute):
		t.Fatal("the index did not reach the disk within a minute of space coming back")
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if wm, err := openDir(t, dir).Watermark(); err != nil || wm != batches {
		t.Fatalf("watermark after space came back: %d, %v; want %d", wm, err, batches)
	}
}
