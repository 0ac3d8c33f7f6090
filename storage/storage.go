package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// schemaVersion is the keyspace layout this code reads and writes.
const schemaVersion = 1

// defaultCacheSize is Pebble's block cache size when Options.CacheSize is 0.
const defaultCacheSize = 64 << 20

// memTableSize is the largest a memtable grows; Pebble starts small and
// grows it as writes come.
const memTableSize = 32 << 20

var (
	// ErrNotFound is returned by reads of a document, record or local key
	// that does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("storage: closed")
	// ErrInvalid wraps every rejection of bad input; nothing was changed.
	ErrInvalid = errors.New("storage: invalid input")
	// ErrLocked is returned by Open when another process (or another Store
	// in this process) has the directory open.
	ErrLocked = errors.New("storage: directory already in use")
	// ErrSchemaTooNew is returned by Open for a store written by a newer
	// version of this package.
	ErrSchemaTooNew = errors.New("storage: schema version newer than supported")
)

// Options configure Open. The zero value is ready to use.
type Options struct {
	// FS is the filesystem; nil means the OS filesystem. Tests may pass
	// vfs.NewMem().
	FS vfs.FS
	// Logger receives the store's and Pebble's logs; nil discards them.
	Logger *slog.Logger
	// CacheSize is Pebble's block cache in bytes; 0 means 64 MiB.
	CacheSize int64
	// MinFree is the free space, in bytes, that the store keeps on its
	// filesystem: writes that would leave less fail with a
	// *DiskFullError, and a quarter of it is held in a ballast file that
	// is released when the disk fills anyway. 0 means DefaultMinFree.
	MinFree int64
	// TextTerms names the term fields whose values hold text a user wrote
	// (tags, say), as opposed to hashes and enumerations. Expunge compacts
	// the keys of an erased document's terms in these fields only; nil
	// means every field.
	TextTerms []string
}

// Store is one node's database. Its methods are safe for concurrent use.
// Callers must serialise Commits of the same document; Commits of
// different documents run concurrently and share fsyncs.
//
// On a full disk, writes fail with a *DiskFullError (ErrDiskFull) and
// change nothing, reads go on, and writes succeed again once space is
// freed. When a write to the write-ahead log fails all the same, or Open
// found the disk full and opened the database read-only, the next write
// that finds enough free space reopens the database.
type Store struct {
	dir   string
	opts  Options
	lock  *pebble.Lock
	log   *slog.Logger
	space *space
	wal   *walGuard // the filesystem Pebble writes through

	// dbMu guards db and shut. Every call holds it for reading while it
	// uses db (enter, leave); reopening and closing the database hold it
	// for writing. Reopening only tries the lock (dbMu.TryLock), so that a
	// call nested in another's callback never waits behind it.
	dbMu     sync.RWMutex
	db       *pebble.DB // nil when reopening failed
	shut     bool       // Close has closed db
	readOnly atomic.Bool
	schema   int
	// held[kind] is set when a record of kind may be stored: at open for
	// each kind that has one, and by every commit of one, before the
	// commit is visible; it is never cleared while the database is open.
	// A kind not held has no record, so that a point read of it (a
	// tombstone looked for under each id a peer sends) needs no Pebble
	// lookup.
	held [256]atomic.Bool

	// eraseMu guards what erasing Commits left for Expunge: their keys, or
	// everything when an erasure was pending at Open. expungeMu serialises
	// Expunge.
	eraseMu   sync.Mutex
	eraseKeys [][]byte
	eraseAll  bool
	expungeMu sync.Mutex

	// commitMu orders what is handed to Pebble's commit pipeline: sequence
	// numbers with batches in the WAL, and the check that the WAL has not
	// failed with every batch handed over.
	commitMu sync.Mutex
	nextSeq  uint64 // guarded by commitMu
	durable  atomic.Uint64
	// applied counts the commits applied (visible to reads), from 1; see
	// Applied.
	applied atomic.Uint64

	// digestMu guards digest, the anti-entropy digest (Digest): read from
	// the database when it opens, then brought up to date by each commit
	// as Pebble applies it (under commitMu, so that it is the digest of
	// the commits applied so far), so that reading it reads nothing.
	digestMu sync.Mutex
	digest   [256][32]byte

	// closeMu guards closed; ops counts the calls in progress so that Close
	// waits for them before closing Pebble.
	closeMu sync.RWMutex
	closed  bool
	ops     sync.WaitGroup
}

// Open opens the store in dir, creating it if needed. It fails with
// ErrLocked if the directory is in use and with ErrSchemaTooNew if the
// store was written by a newer version. Open reads no documents: the
// change log's last key gives the sequence number to continue from. On a
// disk with less free space than the reserve (Options.MinFree), it opens
// the database read-only; a new store then cannot be created and Open
// fails with a *DiskFullError.
func Open(dir string, opts Options) (*Store, error) {
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = defaultCacheSize
	}
	if opts.MinFree < 0 {
		return nil, fmt.Errorf("%w: negative MinFree %d", ErrInvalid, opts.MinFree)
	}

	if err := fs.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", dir, err)
	}
	lock, err := pebble.LockDirectory(dir, fs)
	if err != nil {
		if lockHeld(err) {
			return nil, fmt.Errorf("%w: %s: %w", ErrLocked, dir, err)
		}
		return nil, fmt.Errorf("storage: lock %s: %w", dir, err)
	}
	s := &Store{dir: dir, opts: opts, lock: lock, log: log, space: newSpace(fs, dir, opts.MinFree, log)}
	s.wal = &walGuard{FS: vfs.OnDiskFull(fs, s.space.release)}
	if err := s.open(); err != nil {
		return nil, errors.Join(err, lock.Close())
	}
	if _, err := s.getValue(metaKey(metaErasePending)); err == nil {
		s.eraseAll = true // erased before a crash, not expunged yet
	} else if !errors.Is(err, ErrNotFound) {
		return nil, errors.Join(fmt.Errorf("storage: open %s: %w", dir, err), s.closeDB(), lock.Close())
	}
	log.Info("storage opened", "dir", dir, "schema", s.schema, "seq", s.durable.Load(), "read_only", s.readOnly.Load())
	return s, nil
}

// open opens the database and reads where the change log ends: read-only
// when the disk has less free space than the reserve, since Pebble writes
// at once (a new log file, the manifest) and cannot take a failed write
// back. Callers hold dbMu or own the store alone.
func (s *Store) open() error {
	readOnly := !s.space.enough()
	db, err := pebble.Open(s.dir, s.pebbleOptions(readOnly))
	if err != nil {
		if readOnly && errors.Is(err, pebble.ErrDBDoesNotExist) {
			return fmt.Errorf("storage: create %s: %w", s.dir, s.space.full())
		}
		if readOnly {
			return fmt.Errorf("storage: open %s read-only (%w): %w", s.dir, s.space.full(), err)
		}
		return fmt.Errorf("storage: open %s: %w", s.dir, err)
	}
	s.db = db
	if err := s.init(readOnly); err != nil {
		s.db = nil
		return errors.Join(err, db.Close())
	}
	s.wal.reset()
	s.readOnly.Store(readOnly)
	if readOnly {
		s.log.Warn("the disk is full: storage is open for reading only until space is freed", "error", s.space.full())
	}
	return nil
}

func (s *Store) pebbleOptions(readOnly bool) *pebble.Options {
	popts := &pebble.Options{
		FS:                 s.wal,
		Lock:               s.lock,
		Logger:             pebbleLogger{s.log},
		EventListener:      &pebble.EventListener{BackgroundError: s.backgroundError},
		CacheSize:          s.opts.CacheSize,
		Merger:             digestMerger,
		FormatMajorVersion: pebble.FormatNewest,
		ReadOnly:           readOnly,
		// Ids are random, so each flushed memtable overlaps every table
		// of the base level, which a compaction then rewrites: larger
		// memtables mean fewer such rewrites. An import of 10,000
		// memories runs about 20 % faster than with Pebble's default of
		// 4 MiB. (A larger base level too cut compactions further but
		// slowed the first reads after a start.)
		MemTableSize: memTableSize,
		Cleaner:      expungeCleaner{},
	}
	// Ids are random, so every table of a level may hold any id: bloom
	// filters spare a point read the tables that lack its key. Levels
	// below L0 inherit L0's policy.
	popts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	return popts
}

// init checks (or, on a fresh store, writes) the schema version and finds
// the last sequence number.
func (s *Store) init(readOnly bool) error {
	dir := s.dir
	v, err := s.getValue(metaKey(metaSchema))
	switch {
	case errors.Is(err, ErrNotFound) && readOnly:
		return fmt.Errorf("storage: create %s: %w", dir, s.space.full())
	case errors.Is(err, ErrNotFound):
		v = binary.BigEndian.AppendUint32(nil, schemaVersion)
		if err := s.db.Set(metaKey(metaSchema), v, pebble.Sync); err != nil {
			return fmt.Errorf("storage: open %s: write schema version: %w", dir, err)
		}
	case err != nil:
		return fmt.Errorf("storage: open %s: %w", dir, err)
	case len(v) != 4:
		return fmt.Errorf("storage: open %s: corrupt schema version %x", dir, v)
	}
	s.schema = int(binary.BigEndian.Uint32(v))
	if s.schema > schemaVersion {
		return fmt.Errorf("%w: %s has version %d, this build knows %d", ErrSchemaTooNew, dir, s.schema, schemaVersion)
	}
	if s.schema != schemaVersion {
		return fmt.Errorf("storage: open %s: unknown schema version %d", dir, s.schema)
	}

	it, err := s.db.NewIter(prefixOptions([]byte{prefixChange}))
	if err != nil {
		return fmt.Errorf("storage: open %s: read change log: %w", dir, err)
	}
	var last uint64
	if it.Last() && len(it.Key()) > changeKindAt {
		last = binary.BigEndian.Uint64(it.Key()[1:changeKindAt])
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("storage: open %s: read change log: %w", dir, err)
	}
	s.nextSeq = last + 1
	s.durable.Store(last)
	// A database opened again may hold less than was applied before (a
	// batch whose log write failed): what was read against Applied is
	// read again.
	s.applied.Add(1)
	if err := s.loadDigest(); err != nil {
		return err
	}
	return s.findHeld()
}

// findHeld sets held for the kinds of which a record is stored.
func (s *Store) findHeld() error {
	for _, kind := range []Kind{KindMemory, KindEdge, KindMesh, KindPurge} {
		it, err := s.db.NewIter(prefixOptions(recordKey(kind, "")))
		if err != nil {
			return fmt.Errorf("storage: open %s: %w", s.dir, err)
		}
		s.held[kind].Store(it.First())
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return fmt.Errorf("storage: open %s: %w", s.dir, err)
		}
	}
	return nil
}

// Close waits for calls in progress, then closes the database. Every
// committed change is already durable. Callbacks passed to Store methods
// must not call Close.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.closeMu.Unlock()
	s.ops.Wait()
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	s.shut = true
	var err error
	if s.db != nil {
		err = errors.Join(s.flushForClose(), s.closeDB())
	}
	if err = errors.Join(err, s.lock.Close()); err != nil {
		return fmt.Errorf("storage: close: %w", err)
	}
	s.log.Info("storage closed", "seq", s.durable.Load())
	return nil
}

// closeFlushWait bounds how long Close waits for the memtable to be
// flushed.
const closeFlushWait = 10 * time.Second

// flushForClose flushes the memtable, which spares the next Open replaying
// up to memTableSize of log; what stays unflushed is replayed. It does not
// when writes are blocked or the disk is short of space: flushing rotates
// the log, which Pebble cannot survive failing, and a flush that fails is
// retried until the database closes. Callers hold dbMu.
func (s *Store) flushForClose() error {
	if s.blocked() != nil || !s.space.enough() {
		s.log.Warn("closing storage without flushing: the disk is full; the next start replays the log")
		return nil
	}
	flushed, err := s.db.AsyncFlush()
	if err != nil {
		return err
	}
	select {
	case <-flushed:
	case <-time.After(closeFlushWait):
		s.log.Warn("memtable not flushed before close; the next start replays the log", "waited", closeFlushWait)
	}
	return nil
}

// closeDB closes the database. After a failed log write, Pebble's Close
// reports that failure again: it was reported to the write, and everything
// acknowledged before it is in the log, so it is logged, not returned.
// Callers hold dbMu.
func (s *Store) closeDB() error {
	err := s.db.Close()
	s.db = nil
	if err != nil && s.wal.err() != nil {
		s.log.Warn("closed storage after a failed log write", "err", err)
		return nil
	}
	return err
}

// enter registers a call in progress; it fails once Close has begun, or
// when the database could not be reopened. Every successful enter is
// paired with a leave.
func (s *Store) enter() error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.dbMu.RLock()
	if s.db == nil {
		s.dbMu.RUnlock()
		return fmt.Errorf("storage: the database could not be reopened after a full disk: %w", s.space.full())
	}
	s.ops.Add(1)
	return nil
}

func (s *Store) leave() {
	s.dbMu.RUnlock()
	s.ops.Done()
}

// SchemaVersion is the keyspace version of the open store.
func (s *Store) SchemaVersion() int { return s.schema }

// Applied counts the commits applied so far, visible to reads, from 1.
// A caller that reads it as n, then finds a document absent (or reads its
// version), knows that version is still the stored one while Applied
// returns n: see Record.NoneAt.
func (s *Store) Applied() uint64 { return s.applied.Load() }

// DurableSeq is the highest sequence number up to which every Commit is
// durable. When Commit returns seq, DurableSeq() >= seq.
func (s *Store) DurableSeq() uint64 { return s.durable.Load() }

// lockHeld reports whether err from pebble.LockDirectory means the lock is
// held: fcntl's EAGAIN or EACCES from another process (EAGAIN from a
// vfs.MemFS), or Pebble's own refusal within this process.
func lockHeld(err error) bool {
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return false // creating the lock file failed
	}
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		err.Error() == "lock held by current process"
}

// backgroundRetryDelay spaces out Pebble's retries of a flush or
// compaction that failed for want of space.
const backgroundRetryDelay = time.Second

// backgroundError logs a failed flush or compaction, which Pebble retries.
// Pebble retries a failed flush at once, and calls this from the failed job
// with its mutex held (which reads do not take): on a full disk, waiting
// here keeps the retries from spinning.
func (s *Store) backgroundError(err error) {
	s.log.Warn("storage background work failed; it is retried", "err", err)
	if errors.Is(err, syscall.ENOSPC) {
		time.Sleep(backgroundRetryDelay)
	}
}

// pebbleLogger routes Pebble's logs to slog.
type pebbleLogger struct{ log *slog.Logger }

// Infof logs Pebble's routine messages (WAL replay, flushes, compactions)
// at debug level: they describe Pebble's internals, not memmesh's state.
func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "source", "pebble")
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...), "source", "pebble")
}

// Fatalf exits the process, as Pebble's default logger does: Pebble calls
// it only when going on could lose or corrupt data.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...), "source", "pebble", "fatal", true)
	os.Exit(1)
}
