package storage

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walGuard is the filesystem Pebble writes through. It records the first
// failed write or sync of a write-ahead log file, before Pebble learns of
// it. Pebble's log writer keeps such an error and panics on the next batch
// it is given, with its commit pipeline locked, after which the database
// can be neither written nor closed. So the store hands Pebble no batch once
// the guard has recorded a failure (the check and the hand-over happen
// under commitMu, and Pebble can only fail a later batch after it has seen
// the error the guard recorded first), and reopens the database to write
// again.
type walGuard struct {
	vfs.FS
	failure atomic.Pointer[error]
}

// err returns the recorded failure, or nil.
func (g *walGuard) err() error {
	if p := g.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records err unless a failure is already recorded.
func (g *walGuard) fail(err error) {
	g.failure.CompareAndSwap(nil, &err)
}

// reset forgets the failure: the database was reopened.
func (g *walGuard) reset() { g.failure.Store(nil) }

// Unwrap returns the guarded filesystem.
func (g *walGuard) Unwrap() vfs.FS { return g.FS }

// isWAL reports whether name is a write-ahead log file (NNNNNN.log).
func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

func (g *walGuard) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.Create(name, category)
	return g.watch(name, f, err)
}

func (g *walGuard) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := g.FS.ReuseForWrite(oldname, newname, category)
	return g.watch(newname, f, err)
}

func (g *walGuard) watch(name string, f vfs.File, err error) (vfs.File, error) {
	if !isWAL(name) {
		return f, err
	}
	if err != nil {
		g.fail(err)
		return f, err
	}
	return &walFile{File: f, g: g}, nil
}

// walFile is a write-ahead log file whose write and sync failures the guard
// records.
type walFile struct {
	vfs.File
	g *walGuard
}

func (f *walFile) check(err error) error {
	if err != nil {
		f.g.fail(err)
	}
	return err
}

func (f *walFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.check(err)
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.check(err)
}

func (f *walFile) Sync() error     { return f.check(f.File.Sync()) }
func (f *walFile) SyncData() error { return f.check(f.File.SyncData()) }

func (f *walFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.check(err)
}

// reopenWait bounds how long a write waits for the calls in progress to
// end so that it can reopen the database.
const reopenWait = 5 * time.Second

// errBusy reports a write that could not reopen the database because other
// calls kept using it.
var errBusy = errors.New("storage: busy reopening the database after a full disk; try again")

// tryLockDB takes dbMu for writing, to reopen the database, and reports
// whether it could within reopenWait. It only tries the lock: a call
// nested in another's callback (which holds dbMu for reading) must never
// wait behind a writer that waits for that callback to end.
func (s *Store) tryLockDB() bool {
	deadline := time.Now().Add(reopenWait)
	for !s.dbMu.TryLock() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// blocked returns why writes cannot be handed to Pebble now, or nil: a
// failed log write, or a database opened read-only. Callers hold commitMu
// (or dbMu) so that no batch follows a failure.
func (s *Store) blocked() error {
	if err := s.wal.err(); err != nil {
		return s.failedWrite(err)
	}
	if s.readOnly.Load() {
		return s.space.full()
	}
	return nil
}

// failedWrite records a failed write and returns it as the caller reports
// it: a full disk as a *DiskFullError.
func (s *Store) failedWrite(err error) error {
	s.wal.fail(err)
	if errors.Is(err, syscall.ENOSPC) {
		return s.space.full()
	}
	return fmt.Errorf("storage: write: %w", err)
}

// recover reopens the database, when writes are blocked and the disk has
// space again, so that the write that calls it can go ahead. It returns
// why the write cannot, or nil.
func (s *Store) recover() error {
	if s.wal.err() == nil && !s.readOnly.Load() {
		return nil
	}
	if !s.space.enough() {
		return s.space.full()
	}
	if !s.tryLockDB() {
		return errBusy
	}
	defer s.dbMu.Unlock()
	switch {
	case s.shut:
		return ErrClosed
	case s.blocked() == nil:
		return nil // another write reopened it
	}
	if s.db != nil {
		if err := s.closeDB(); err != nil {
			s.log.Warn("close storage to reopen it", "err", err)
		}
	}
	if err := s.open(); err != nil {
		s.log.Error("reopen storage after a full disk", "err", err)
		return err
	}
	s.log.Info("storage reopened: space is back, writes go on", "seq", s.durable.Load(), "read_only", s.readOnly.Load())
	return s.blocked()
}
