package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultMinFree is the free space a store keeps in reserve when
// Options.MinFree is 0. It covers what Pebble writes besides the batches
// themselves (a new write-ahead log preallocates 110 % of the 32 MiB
// memtable, a flush writes up to a memtable's worth of tables, a
// compaction writes its outputs before it deletes its inputs) and what the
// search index beside the store writes while it catches up and merges.
const DefaultMinFree = 256 << 20

// ballastShare is the part of the reserve held in the ballast file.
const ballastShare = 4

// ballastName is the ballast file in the store's directory. Pebble ignores
// files it does not name.
const ballastName = "memmesh.ballast"

// spaceCheckInterval is how long a measured free space is trusted. In
// between, each write subtracts its size from it, and a write that would
// take it below the reserve measures again: a refusal is always based on a
// fresh measure.
const spaceCheckInterval = 250 * time.Millisecond

// ErrDiskFull is matched by every write refused because the disk is (nearly)
// full. The error returned is a *DiskFullError.
var ErrDiskFull = errors.New("storage: disk full")

// DiskFullError reports a write refused because the filesystem of the store
// has less free space than the store keeps in reserve. Nothing was written.
// It matches ErrDiskFull. Its message is meant for the user.
type DiskFullError struct {
	Free  int64  // bytes available on the filesystem
	Need  int64  // bytes that must be available for the write
	Mount string // the filesystem's mount point (or the store's directory)
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("disk full: %s free on %s, memmesh needs %s; free some space and try again",
		mib(e.Free, false), e.Mount, mib(e.Need, true))
}

// Is makes errors.Is(err, ErrDiskFull) true.
func (e *DiskFullError) Is(target error) bool { return target == ErrDiskFull }

// mib formats a byte count in whole MiB, rounded down or up.
func mib(n int64, up bool) string {
	if up {
		n += 1<<20 - 1
	}
	return fmt.Sprintf("%d MiB", max(n, 0)>>20)
}

// space keeps the store's writes out of the last MinFree bytes of its
// filesystem, so that Pebble (whose write-ahead log cannot recover from a
// failed write) and the search index never meet a full disk in normal
// operation. Part of the reserve is held in a ballast file, released when
// the disk fills under the store anyway (another program wrote the rest):
// Pebble's writes that meet ENOSPC delete it and retry (vfs.OnDiskFull).
// The ballast is made again once the space is back.
type space struct {
	fs      vfs.FS // the filesystem without the ENOSPC handler
	dir     string
	mount   string
	reserve int64
	ballast int64 // size of the ballast file; 0: none
	log     *slog.Logger
	now     func() time.Time // the clock; tests move it

	mu        sync.Mutex
	avail     int64     // free bytes: measured at checked, less what was written since
	checked   time.Time // zero: measure before the next write
	ballastIn bool      // the ballast file is in place
	measured  bool      // the filesystem reports its usage
}

func newSpace(fs vfs.FS, dir string, minFree int64, log *slog.Logger) *space {
	if minFree == 0 {
		minFree = DefaultMinFree
	}
	sp := &space{fs: fs, dir: dir, mount: dir, reserve: minFree, ballast: minFree / ballastShare, log: log, now: time.Now}
	if fs == vfs.Default {
		sp.mount = mountPoint(dir)
	}
	return sp
}

// admit accounts for a write of need bytes, or refuses it with a
// *DiskFullError when it would leave less than the reserve free.
func (sp *space) admit(need int64) error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.now().Sub(sp.checked) > spaceCheckInterval || sp.avail-need < sp.reserve {
		sp.measure()
	}
	if !sp.measured {
		return nil
	}
	if sp.avail-need < sp.reserve {
		return &DiskFullError{Free: sp.avail, Need: sp.reserve + need, Mount: sp.mount}
	}
	sp.avail -= need
	return nil
}

// enough reports whether the free space is at least the reserve, measured
// now.
func (sp *space) enough() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.measure()
	return !sp.measured || sp.avail >= sp.reserve
}

// full returns the refusal of a write that needs nothing but the reserve,
// measured now.
func (sp *space) full() *DiskFullError {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.measure()
	return &DiskFullError{Free: sp.avail, Need: sp.reserve, Mount: sp.mount}
}

// measure reads the free space and puts the ballast back when there is
// room for it beyond the reserve. Callers hold mu.
func (sp *space) measure() {
	u, err := sp.fs.GetDiskUsage(sp.dir)
	if err != nil {
		if sp.measured || sp.checked.IsZero() {
			sp.log.Warn("cannot measure free disk space; writes are not checked against the reserve", "dir", sp.dir, "err", err)
		}
		sp.measured, sp.checked = false, sp.now()
		return
	}
	sp.measured, sp.checked = true, sp.now()
	sp.avail = int64(min(u.AvailBytes, 1<<62))
	if !sp.ballastIn && sp.ballast > 0 {
		sp.placeBallast()
	}
}

// placeBallast finds the ballast file in place, or allocates it when there
// is room for it beyond the reserve. Callers hold mu.
func (sp *space) placeBallast() {
	path := sp.fs.PathJoin(sp.dir, ballastName)
	if fi, err := sp.fs.Stat(path); err == nil && fi.Size() == sp.ballast {
		sp.ballastIn = true
		return
	}
	if sp.avail < sp.reserve+sp.ballast {
		return
	}
	err := allocate(sp.fs, path, sp.ballast)
	if err != nil {
		sp.log.Warn("cannot allocate the disk-space ballast; the reserve still applies", "path", path, "err", err)
		if !errors.Is(err, syscall.ENOSPC) {
			sp.ballast = 0 // the filesystem cannot: do not try on every measure
		}
		return
	}
	sp.ballastIn = true
	sp.avail -= sp.ballast
	sp.log.Info("disk-space ballast in place", "path", path, "bytes", sp.ballast)
}

// allocate makes path a file of size bytes whose blocks are allocated on
// the disk (fallocate on Linux; elsewhere Pebble's filesystem may leave it
// sparse, and the ballast then holds nothing).
func allocate(fs vfs.FS, path string, size int64) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	err = f.Preallocate(0, size)
	if err == nil {
		// The size says the ballast is whole when it is found again.
		_, err = f.WriteAt([]byte{0}, size-1)
	}
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return errors.Join(err, fs.Remove(path))
	}
	return nil
}

// release deletes the ballast. Pebble's ENOSPC handler calls it while it
// holds every write back, then retries the write that failed; it is called
// again for each later write that meets ENOSPC.
func (sp *space) release() {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.checked = time.Time{}
	if !sp.ballastIn {
		sp.log.Error("the disk is full and no ballast is left to release; writes fail until space is freed", "mount", sp.mount)
		return
	}
	path := sp.fs.PathJoin(sp.dir, ballastName)
	if err := sp.fs.Remove(path); err != nil {
		sp.log.Error("cannot release the disk-space ballast", "path", path, "err", err)
		return
	}
	sp.ballastIn = false
	sp.log.Warn("the disk is full: released the disk-space ballast so that writes in progress complete; new writes are refused until space is freed",
		"mount", sp.mount, "bytes", sp.ballast)
}

// mountPoint returns the mount point of the filesystem holding dir: its
// highest ancestor on the same device. It returns dir when it cannot tell.
func mountPoint(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	dev, ok := device(dir)
	if !ok {
		return dir
	}
	for {
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		if d, ok := device(parent); !ok || d != dev {
			return dir
		}
		dir = parent
	}
}
