package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
)

// expungeWait bounds how long Expunge waits for bleve to write the merged
// segment and delete the old ones.
const expungeWait = time.Minute

// Expunge removes from the index's files what they still hold of removed
// memories. A removal in bleve only marks the memory deleted in the
// segment that holds it: the segment keeps its terms and stored fields
// until a merge rewrites it. Expunge waits until the last Apply is on
// disk, merges every segment into one (which drops deleted memories), and
// waits until bleve has deleted the segment files from before. It costs a
// rewrite of the whole index: call it after erasures, not routinely.
func (ix *Index) Expunge(ctx context.Context) error {
	ix.mu.Lock()
	persisted := ix.persisted
	ix.mu.Unlock()
	if ix.closed.Load() {
		return ErrClosed
	}
	if err := awaitPersisted(ctx, persisted); err != nil {
		return err
	}
	adv, err := ix.idx.Advanced()
	if err != nil {
		return bleveError("expunge", err)
	}
	sc, ok := adv.(*scorch.Scorch)
	if !ok {
		return fmt.Errorf("search: expunge: index is a %T, not scorch", adv)
	}
	dir := ix.idx.Name()
	old, err := segmentFiles(dir)
	if err != nil {
		return err
	}
	// bleve merges nothing when there is one segment, even one with
	// deleted memories in it: a placeholder in a segment of its own makes
	// sure there are two.
	if err := ix.placeholder(ctx, true); err != nil {
		return err
	}
	if err := sc.ForceMerge(ctx, &mergeplan.SingleSegmentMergePlanOptions); err != nil {
		return bleveError("expunge", err)
	}
	if err := ix.placeholder(ctx, false); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, expungeWait)
	defer cancel()
	// Scorch deletes the files of old snapshots after it persists a new
	// one, and only those no reader holds then: a search running at that
	// moment keeps them until the next persist. Each nudge persists one
	// more snapshot, so that they go once the search ends.
	nudge := time.NewTicker(expungeNudge)
	defer nudge.Stop()
	for {
		now, err := segmentFiles(dir)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(now, func(f string) bool { return slices.Contains(old, f) }) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("search: expunge: old segments not deleted yet: %w", ctx.Err())
		case <-nudge.C:
			if err := ix.placeholder(ctx, false); err != nil {
				return err
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// expungeNudge is how often Expunge persists a snapshot while old segment
// files remain.
const expungeNudge = 200 * time.Millisecond

// placeholderID names the placeholder document of Expunge; no memory id
// has a '~'. It has no status, so no query matches it.
const placeholderID = "~expunge"

// placeholder indexes (add) or removes the placeholder document and waits
// until that is on disk.
func (ix *Index) placeholder(ctx context.Context, add bool) error {
	ix.mu.Lock()
	if ix.closed.Load() {
		ix.mu.Unlock()
		return ErrClosed
	}
	b := ix.idx.NewBatch()
	var err error
	if add {
		err = b.Index(placeholderID, document{Updated: minTime, UpdatedKey: timeKey(minTime), UpdatedDay: timeKey(minTime), UpdatedHour: timeKey(minTime)})
	} else {
		b.Delete(placeholderID)
	}
	persisted := make(chan struct{})
	b.SetPersistedCallback(func(error) { close(persisted) })
	if err == nil {
		err = ix.idx.Batch(b)
	}
	if err == nil {
		ix.persisted = persisted
	}
	ix.mu.Unlock()
	if err != nil {
		return bleveError("expunge", err)
	}
	return awaitPersisted(ctx, persisted)
}

func awaitPersisted(ctx context.Context, persisted <-chan struct{}) error {
	if persisted == nil {
		return nil
	}
	select {
	case <-persisted:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// segmentFiles lists the segment files of the index in dir.
func segmentFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "store"))
	if errors.Is(err, os.ErrNotExist) {
		entries, err = os.ReadDir(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("search: expunge: %w", err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".zap") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
