package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable/block"
)

// metaErasePending is set, in the batch of a Commit that erases, until
// Expunge has removed what the files still held of the erased documents.
const metaErasePending = "erase-pending"

// expungeWait bounds how long Expunge waits for Pebble to delete the files
// that compactions made obsolete (an open iterator keeps them a moment).
const expungeWait = 30 * time.Second

// erased remembers the keys an erasing Commit deleted, for Expunge.
func (s *Store) erased(keys [][]byte) {
	if len(keys) == 0 {
		return
	}
	s.eraseMu.Lock()
	s.eraseKeys = append(s.eraseKeys, keys...)
	s.eraseMu.Unlock()
}

// CheckSpace returns a *DiskFullError when the store's filesystem has less
// free space than its reserve, or nil: work beside the store that writes
// much (merging the search index, say) can wait for space as writes do.
func (s *Store) CheckSpace() error {
	if !s.space.enough() {
		return s.space.full()
	}
	return nil
}

// ErasePending reports whether an erasing Commit has not been expunged
// yet (in this process, or by a process that stopped before it could).
func (s *Store) ErasePending() bool {
	s.eraseMu.Lock()
	defer s.eraseMu.Unlock()
	return len(s.eraseKeys) > 0 || s.eraseAll
}

// Expunge removes from the store's files what they still hold of the
// documents erased by Commit: a deletion in an LSM tree only shadows the
// old value, which stays in older tables and in the write-ahead log until
// compactions drop it. Expunge flushes the memtable (retiring its log),
// compacts the range of every erased key that held text (the document,
// its record and its terms in Options.TextTerms) down to the last level,
// until no deletion tombstone holds one of those keys either (a tombstone
// carries its key), and waits
// until Pebble has deleted the obsolete tables and logs. Write-ahead logs
// are never recycled (see expungeCleaner), so a retired log is deleted,
// not reused with old records in it. After a crash between the Commit and
// Expunge, the store does not know the erased keys any more, and the
// next Expunge compacts the whole keyspace.
//
// Expunge costs compactions: call it after erasures, not on every write.
// Concurrent calls are serialised.
func (s *Store) Expunge(ctx context.Context) error {
	s.expungeMu.Lock()
	defer s.expungeMu.Unlock()

	s.eraseMu.Lock()
	keys, all := s.eraseKeys, s.eraseAll
	s.eraseKeys, s.eraseAll = nil, false
	s.eraseMu.Unlock()
	if len(keys) == 0 && !all {
		return nil
	}
	err := s.expunge(ctx, keys, all)
	if err == nil {
		err = s.retireManifests(ctx)
	}
	s.eraseMu.Lock()
	if err != nil {
		// Try again next time, with whatever erasures came meanwhile.
		s.eraseKeys = append(s.eraseKeys, keys...)
		s.eraseAll = s.eraseAll || all
	}
	done := len(s.eraseKeys) == 0 && !s.eraseAll
	s.eraseMu.Unlock()
	if err != nil {
		return err
	}
	if done {
		return s.clearErasePending()
	}
	return nil
}

func (s *Store) clearErasePending() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	b := s.db.NewBatch()
	defer b.Close()
	b.Delete(metaKey(metaErasePending), nil)
	return s.apply(b, int64(b.Len()), true, nil)
}

func (s *Store) expunge(ctx context.Context, keys [][]byte, all bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	// Flushes and compactions write, and Pebble does not survive failing
	// to start a new log: on a full disk the expunge waits for space.
	if err := s.blocked(); err != nil {
		return err
	}
	if !s.space.enough() {
		return s.space.full()
	}
	ranges := keyRanges(keys)
	if all {
		ranges = [][2][]byte{{{0}, {0xff, 0xff}}}
	}
	for round := 0; len(ranges) > 0; round++ {
		if round == expungeRounds {
			return fmt.Errorf("storage: expunge: %d erased keys are still in the tables after %d rounds of compactions", len(ranges), round)
		}
		if err := s.compact(ctx, ranges); err != nil {
			return err
		}
		left, err := s.tombstones(ctx, keys, all)
		if err != nil {
			return err
		}
		// A compaction that finds nothing under a table moves it down
		// whole instead of rewriting it, so a deletion tombstone, which
		// holds its key, can reach the last level and stay there. Deleted
		// again, the key meets that tombstone in the next round's
		// compaction, which rewrites the table and drops both.
		if len(left) > 0 {
			b := s.db.NewBatch()
			for _, k := range left {
				b.Delete(k, nil)
			}
			err := s.apply(b, int64(b.Len()), false, nil)
			b.Close()
			if err != nil {
				return err
			}
		}
		ranges = keyRanges(left)
	}
	return s.awaitObsoleteDeleted(ctx)
}

// expungeRounds bounds the rounds of compactions of one expunge; the
// second round removes what the first moved down whole.
const expungeRounds = 4

// compact flushes the memtable and compacts each range down to the last
// level.
func (s *Store) compact(ctx context.Context, ranges [][2][]byte) error {
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("storage: expunge: flush: %w", err)
	}
	for _, r := range ranges {
		if err := s.db.Compact(ctx, r[0], r[1], true); err != nil {
			return fmt.Errorf("storage: expunge: compact: %w", err)
		}
	}
	return nil
}

// tombstones returns the keys of keys that a deletion tombstone in the
// tables still holds, or, with all, every key that one holds.
func (s *Store) tombstones(ctx context.Context, keys [][]byte, all bool) ([][]byte, error) {
	var left [][]byte
	visit := func(k *pebble.InternalKey, _ pebble.LazyValue, _ pebble.IteratorLevel) error {
		switch k.Kind() {
		case pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete, pebble.InternalKeyKindDeleteSized:
			left = append(left, bytes.Clone(k.UserKey))
		}
		return nil
	}
	scan := func(lower, upper []byte) error {
		err := s.db.ScanInternal(ctx, block.CategoryUnknown, lower, upper, visit, nil, nil, nil, nil)
		if err != nil {
			return fmt.Errorf("storage: expunge: scan: %w", err)
		}
		return nil
	}
	if all {
		// Every keyspace but the digest's: it holds no erased data, and
		// Pebble's scan cannot read the merge operands that commits add
		// to it while the expunge runs (it panics).
		if err := scan([]byte{0}, []byte{prefixDigest}); err != nil {
			return nil, err
		}
		return left, scan([]byte{prefixDigest + 1}, []byte{0xff, 0xff})
	}
	for _, r := range keyRanges(keys) {
		if err := scan(r[0], r[1]); err != nil {
			return nil, err
		}
	}
	return left, nil
}

// keyRanges returns the sorted keys as ranges [key, key+0x00), each
// holding exactly one key, merged where they touch.
func keyRanges(keys [][]byte) [][2][]byte {
	keys = slices.Clone(keys)
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	out := make([][2][]byte, 0, len(keys))
	for _, k := range keys {
		out = append(out, [2][]byte{k, append(slices.Clip(k), 0)})
	}
	return out
}

// awaitObsoleteDeleted waits until no obsolete or zombie table or log is
// left on disk: Pebble deletes them in the background, and an iterator
// open while a compaction finished keeps its tables until it closes.
func (s *Store) awaitObsoleteDeleted(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, expungeWait)
	defer cancel()
	for {
		m := s.db.Metrics()
		if m.Table.ObsoleteCount == 0 && m.Table.ZombieCount == 0 && m.WAL.ObsoleteFiles == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage: expunge: old files still in use: %w", errors.Join(ctx.Err(), errExpungeWait))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

var errExpungeWait = errors.New("obsolete tables, logs or manifests not deleted yet")

// retireManifests makes Pebble write its manifest anew, twice, and waits
// until every manifest from before is deleted. A manifest records the
// first and last key of every table ever written since it was started, so
// an erased key (a tag, say) that bounded a table stays in it after the
// table is gone. Pebble starts a new manifest at the first change after
// it opens the database and keeps one previous manifest: two reopens,
// each followed by a flush, leave only manifests written after the
// compactions.
func (s *Store) retireManifests(ctx context.Context) error {
	old, err := s.manifests()
	if err != nil {
		return err
	}
	for range 2 {
		if err := s.reopen(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, expungeWait)
	defer cancel()
	for {
		now, err := s.manifests()
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(now, func(m string) bool { return slices.Contains(old, m) }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage: expunge: %w", errors.Join(ctx.Err(), errExpungeWait))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// manifests lists the names of the manifest files in the store's directory.
func (s *Store) manifests() ([]string, error) {
	names, err := s.wal.List(s.dir)
	if err != nil {
		return nil, fmt.Errorf("storage: expunge: list %s: %w", s.dir, err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, "MANIFEST-") }), nil
}

// errExpungeBusy reports an expunge that could not reopen the database
// because other calls kept using it; it is tried again later.
var errExpungeBusy = errors.New("storage: expunge: the database stayed busy; trying again later")

// reopen closes and reopens Pebble while no call is in progress, then
// makes one change and flushes it, which starts a new manifest.
func (s *Store) reopen() error {
	if !s.tryLockDB() {
		return errExpungeBusy
	}
	defer s.dbMu.Unlock()
	if s.shut {
		return ErrClosed
	}
	if err := s.blocked(); err != nil {
		return err
	}
	if err := s.closeDB(); err != nil {
		s.log.Warn("close storage to reopen it", "err", err)
	}
	if err := s.open(); err != nil {
		s.log.Error("reopen storage to retire its manifest", "err", err)
		return fmt.Errorf("storage: expunge: reopen: %w", err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	b.Set(metaKey(metaManifestTurn), nil, nil)
	if err := s.apply(b, int64(b.Len()), true, nil); err != nil {
		return err
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("storage: expunge: flush: %w", err)
	}
	return nil
}

// metaManifestTurn is written after a reopen so that a flush has
// something to write, which makes Pebble start a new manifest.
const metaManifestTurn = "manifest-turn"

// expungeCleaner deletes obsolete files, as Pebble's default cleaner does,
// and claims to need their contents, which is what turns Pebble's
// recycling of write-ahead logs off: a recycled log keeps its old records
// until new ones overwrite them, so an erased value could outlive Expunge
// in it. (The claim comes from ArchiveCleaner, one level down, so that
// DeleteCleaner's Clean is the one used.)
type expungeCleaner struct {
	pebble.DeleteCleaner
	noRecycling
}

type noRecycling struct{ pebble.ArchiveCleaner }

func (expungeCleaner) String() string { return "delete (no log recycling)" }
