package storage

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// testDisk is an in-memory filesystem whose free space the test sets and
// whose writes fail with ENOSPC while it is full, like a disk that another
// program fills.
type testDisk struct {
	*errorfs.FS
	free atomic.Int64 // what GetDiskUsage reports
	full atomic.Bool  // file writes fail with ENOSPC
	// refill keeps the disk full when the ballast is deleted (the other
	// program takes the space at once); otherwise deleting it ends full.
	refill atomic.Bool
}

const plenty = 10 << 30

func newTestDisk() *testDisk {
	d := &testDisk{}
	d.FS = errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(d.inject))
	d.free.Store(plenty)
	return d
}

func (d *testDisk) inject(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFilePreallocate:
		if d.full.Load() {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
	}
	return nil
}

func (d *testDisk) GetDiskUsage(string) (vfs.DiskUsage, error) {
	free := uint64(d.free.Load())
	return vfs.DiskUsage{AvailBytes: free, TotalBytes: 2 * plenty, UsedBytes: 2*plenty - free}, nil
}

func (d *testDisk) Remove(name string) error {
	err := d.FS.Remove(name)
	if err == nil && strings.HasSuffix(name, ballastName) && !d.refill.Load() {
		d.full.Store(false)
	}
	return err
}

// fill makes the disk full; report says whether GetDiskUsage tells so yet.
func (d *testDisk) fill(report bool) {
	d.full.Store(true)
	if report {
		d.free.Store(0)
	}
}

func (d *testDisk) empty() {
	d.full.Store(false)
	d.free.Store(plenty)
}

func openDisk(t *testing.T, d *testDisk) *Store {
	t.Helper()
	s, err := Open("db", Options{FS: d})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// later moves the store's clock past the time a measured free space is
// trusted, so that the next write measures again.
func later(s *Store) {
	s.space.mu.Lock()
	defer s.space.mu.Unlock()
	t := s.space.now().Add(spaceCheckInterval + time.Second)
	s.space.now = func() time.Time { return t }
}

// wantDiskFull fails the test unless err is a *DiskFullError that says
// what the reserve is.
func wantDiskFull(t *testing.T, what string, err error) {
	t.Helper()
	var full *DiskFullError
	if !errors.Is(err, ErrDiskFull) || !errors.As(err, &full) || full.Need < DefaultMinFree {
		t.Fatalf("%s: got %v, want a disk-full error", what, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "disk full: ") || !strings.Contains(msg, "free some space") {
		t.Fatalf("%s: message %q does not say what to do", what, msg)
	}
}

// inTime runs fn and fails the test if it does not return within a
// generous bound: on a full disk, nothing may hang.
func inTime(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return within a minute", what)
	}
}

func TestCommitBelowReserveIsRefused(t *testing.T) {
	d := newTestDisk()
	s := openDisk(t, d)
	commit(t, s, memory("kept", "before"))

	d.free.Store(DefaultMinFree - 1)
	later(s)
	_, err := s.Commit(memory("refused", "below the reserve"))
	wantDiskFull(t, "Commit below the reserve", err)
	wantDiskFull(t, "PutLocal below the reserve", s.PutLocal("k", []byte("v")))
	if _, err := s.Get(KindMemory, "refused"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused commit wrote its record: %v", err)
	}
	if r, err := s.Get(KindMemory, "kept"); err != nil || string(r.Value) != "before" {
		t.Fatalf("read on a full disk: %+v, %v", r, err)
	}

	d.free.Store(plenty)
	later(s)
	commit(t, s, memory("after", "space is back"))
	if err := s.PutLocal("k", []byte("v")); err != nil {
		t.Fatalf("PutLocal once space is back: %v", err)
	}
}

// TestBallastLetsWritesInProgressComplete fills the disk between the
// free-space check and the write: the write that meets ENOSPC deletes the
// ballast and succeeds, and the ballast is made again once space is back.
func TestBallastLetsWritesInProgressComplete(t *testing.T) {
	d := newTestDisk()
	s := openDisk(t, d)
	if _, err := d.Stat(ballastName); err == nil {
		t.Fatal("ballast found at the top of the filesystem, want it in the store's directory")
	}
	if _, err := d.Stat("db/" + ballastName); err != nil {
		t.Fatalf("no ballast after Open: %v", err)
	}

	d.fill(false)
	commit(t, s, memory("a", "written as the disk fills"))
	if _, err := d.Stat("db/" + ballastName); err == nil {
		t.Fatal("the ballast is still there after a write met a full disk")
	}

	d.free.Store(DefaultMinFree + DefaultMinFree/ballastShare + 1<<20)
	later(s)
	commit(t, s, memory("b", "space is back"))
	if fi, err := d.Stat("db/" + ballastName); err != nil || fi.Size() != DefaultMinFree/ballastShare {
		t.Fatalf("ballast not made again once space is back: %v", err)
	}
}

// filledForGood opens a store on a test disk, commits memory "a" and fills
// the disk for good: deleting the ballast frees nothing. report says
// whether the disk's free space shows it yet.
func filledForGood(t *testing.T, report bool) (*testDisk, *Store) {
	t.Helper()
	d := newTestDisk()
	s := openDisk(t, d)
	commit(t, s, memory("a", "acknowledged"))
	d.refill.Store(true)
	d.fill(report)
	return d, s
}

// readA fails the test unless memory "a" of filledForGood reads back.
func readA(t *testing.T, s *Store, what string) {
	t.Helper()
	if r, err := s.Get(KindMemory, "a"); err != nil || string(r.Value) != "acknowledged" {
		t.Fatalf("%s: %+v, %v", what, r, err)
	}
}

// TestFailedLogWrite fills the disk for good under a write: the write
// fails, later writes are refused without reaching Pebble (whose log
// writer would panic), reads go on, and once space is back writes succeed
// again and nothing acknowledged is lost.
func TestFailedLogWrite(t *testing.T) {
	d, s := filledForGood(t, false)
	_, err := s.Commit(memory("b", "meets a full disk"))
	wantDiskFull(t, "Commit meeting a full disk", err)
	d.free.Store(0) // statfs catches up
	for i := range 3 {
		inTime(t, "Commit after a failed log write", func() {
			_, err = s.Commit(memory("c", "after the failure"))
		})
		wantDiskFull(t, "Commit after a failed log write", err)
		wantDiskFull(t, "PutLocalDurable after a failed log write", s.PutLocalDurable("k", []byte{byte(i)}))
	}
	readA(t, s, "read after a failed log write")
	if recs, _ := changes(t, s, 0, 0); len(recs) == 0 || recs[0].ID != "a" {
		t.Fatalf("changes after a failed log write: %v", ids(recs))
	}

	d.refill.Store(false)
	d.empty()
	seq := commit(t, s, memory("d", "space is back"))
	if s.DurableSeq() < seq {
		t.Fatalf("DurableSeq %d < %d after the reopen", s.DurableSeq(), seq)
	}
	inTime(t, "Close", func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})

	s = openDisk(t, d)
	for _, id := range []string{"a", "d"} {
		if _, err := s.Get(KindMemory, id); err != nil {
			t.Fatalf("acknowledged %s lost: %v", id, err)
		}
	}
}

// TestCloseAndOpenOnFullDisk closes a store whose memtable holds writes on a
// full disk, opens it again while the disk is still full (reads only), and
// writes once space is back.
func TestCloseAndOpenOnFullDisk(t *testing.T) {
	d, s := filledForGood(t, true)
	inTime(t, "Close on a full disk", func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close on a full disk: %v", err)
		}
	})

	inTime(t, "Open on a full disk", func() { s = openDisk(t, d) })
	readA(t, s, "read after Open on a full disk")
	_, err := s.Commit(memory("b", "on a full disk"))
	wantDiskFull(t, "Commit after Open on a full disk", err)

	d.refill.Store(false)
	d.empty()
	commit(t, s, memory("b", "space is back"))
	if r, err := s.Get(KindMemory, "b"); err != nil || string(r.Value) != "space is back" {
		t.Fatalf("read after the reopen: %+v, %v", r, err)
	}
}

func TestOpenNewStoreOnFullDisk(t *testing.T) {
	d := newTestDisk()
	d.fill(true)
	_, err := Open("db", Options{FS: d})
	wantDiskFull(t, "Open of a new store on a full disk", err)
}

func TestDiskFullMessage(t *testing.T) {
	err := &DiskFullError{Free: 3<<20 + 5, Need: 256<<20 + 1, Mount: "/home"}
	want := "disk full: 3 MiB free on /home, memmesh needs 257 MiB; free some space and try again"
	if err.Error() != want || !errors.Is(err, ErrDiskFull) {
		t.Fatalf("got %q, want %q", err, want)
	}
}
