package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/memmesh/memmesh/internal/bulkgc"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/search"
	"github.com/memmesh/memmesh/storage"
)

// indexBatch is the most changes applied to the search index at once.
// A backlog (a catch-up, an import, a rebuild) is indexed in batches of
// this size: 2,048 took a fifth less CPU per memory than 1,024 (fewer
// segments to build and merge), for about 30 MB more at the peak; 4,096
// took a quarter less for 130 MB more.
const indexBatch = 2048

// gatherDelay is how long the indexer lets changes accumulate before it
// indexes them, unless a search is waiting. Bigger batches make fewer index
// segments for bleve to merge, which keeps a burst of writes cheap.
const gatherDelay = 250 * time.Millisecond

// indexer keeps the search index up to date with storage by tailing the
// store's change log from the index's watermark. The same loop serves new
// writes and repairs the index after a crash: whatever storage committed
// after the index's last persisted watermark is indexed again.
//
// Captures do not wait for the index; searches do (waitFor), so a search
// sees every write acknowledged before it started (read-your-writes) while
// the index's own persistence stays off the capture path. New changes are
// gathered for gatherDelay before they are indexed; a waiting search cuts
// that short.
type indexer struct {
	store *storage.Store
	index *search.Index
	clock clock.Clock // the gather delay and the retry after a failure
	log   *slog.Logger
	// indexed, when set, is told of every memory indexed anew.
	indexed func(m *model.Memory)
	// applied, when set, is told of each batch applied to the index:
	// the memories indexed and the ids removed.
	applied func(put []model.Memory, del []string)
	wake    chan struct{} // new changes in storage
	hurry   chan struct{} // a search waits for the index

	handed handed // memories committed lately, as their commits materialised them

	mu      sync.Mutex
	held    int           // bulk writes in progress: index only for searches
	done    uint64        // every change up to this seq is in the index
	err     error         // the last indexing failure, cleared on success
	changed chan struct{} // closed and replaced whenever done or err moves
}

func newIndexer(store *storage.Store, index *search.Index, clk clock.Clock, log *slog.Logger) *indexer {
	return &indexer{
		store:   store,
		index:   index,
		clock:   clk,
		log:     log,
		wake:    make(chan struct{}, 1),
		hurry:   make(chan struct{}, 1),
		changed: make(chan struct{}),
	}
}

// hold defers indexing while a bulk write runs, so that its changes are
// indexed in a few large batches instead of competing with it for CPU;
// a search still gets the index up to date at once. The collector's
// target is raised meanwhile (bulkgc). Call the returned function when
// the bulk write ends.
func (ix *indexer) hold() (release func()) {
	endGC := bulkgc.Begin()
	ix.mu.Lock()
	ix.held++
	ix.mu.Unlock()
	return func() {
		ix.mu.Lock()
		ix.held--
		ix.mu.Unlock()
		endGC()
		ix.notify()
	}
}

func (ix *indexer) holding() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.held > 0
}

// notify tells the indexer that storage has new changes.
func (ix *indexer) notify() { signal(ix.wake) }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (ix *indexer) run(ctx context.Context) {
	wm, err := ix.index.Watermark()
	if err != nil {
		ix.log.Error("read index watermark; reindexing everything", "err", err)
		wm = 0
	}
	ix.setDone(wm, nil)
	if behind := ix.store.DurableSeq() - wm; behind > 0 {
		ix.log.Info("search index behind storage; catching up", "watermark", wm, "changes", behind)
	}
	retry := ix.clock.NewTimer(time.Hour)
	retry.Stop()
	whole := true
	for {
		if err := ix.catchUp(ctx, whole); err != nil && ctx.Err() == nil {
			ix.log.Error("index changes", "err", err)
			ix.setDone(ix.doneSeq(), err)
			retry.Reset(time.Second)
		}
		var ok bool
		select {
		case <-ctx.Done():
			return
		case <-ix.wake:
			if whole, ok = ix.gather(ctx); !ok {
				return
			}
		case <-ix.hurry:
			whole = true
		case <-retry.Chan():
			whole = true
		}
	}
}

// gather waits before indexing new changes: gatherDelay, or, while a bulk
// write holds the indexer, until a whole batch (indexBatch) of memories
// was handed over, unless a search hurries it. whole says whether to
// index every change (false: whole batches only); ok is false when ctx
// ends.
func (ix *indexer) gather(ctx context.Context) (whole, ok bool) {
	timer := ix.clock.NewTimer(gatherDelay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, false
		case <-ix.hurry:
			return true, true
		case <-timer.Chan():
			if !ix.holding() {
				return true, true
			}
			if ix.handed.len() >= indexBatch {
				return false, true
			}
			timer.Reset(gatherDelay)
		}
	}
}

// catchUp indexes the durable changes after done: all of them, or, unless
// whole, batches while a whole batch of memories was handed over. The
// collector's target is raised (bulkgc) while more than a batch is left.
func (ix *indexer) catchUp(ctx context.Context, whole bool) error {
	var endGC func()
	defer func() {
		if endGC != nil {
			endGC()
		}
	}()
	for ctx.Err() == nil {
		from, target := ix.doneSeq(), ix.store.DurableSeq()
		if from >= target || !whole && ix.handed.len() < indexBatch {
			return nil
		}
		if endGC == nil && target-from > indexBatch {
			endGC = bulkgc.Begin()
		}
		var put []model.Memory
		var del []string
		last, err := ix.store.ChangeLog(from, indexBatch, func(c storage.Change) error {
			switch {
			case c.Kind == storage.KindPurge && !c.Erased, c.Kind == storage.KindMemory && c.Erased:
				del = append(del, c.ID) // the memory is erased
				return nil
			case c.Kind != storage.KindMemory:
				return nil
			}
			m, err := ix.memoryAt(c)
			if err != nil {
				return err
			}
			put = append(put, m)
			if ix.indexed != nil {
				ix.indexed(&m)
			}
			return nil
		})
		ix.handed.drop(last)
		if err != nil {
			return err
		}
		if last == from {
			// The changes between from and target were superseded by
			// later, not yet durable ones: nothing to index up to target.
			last = target
		}
		if err := ix.index.Apply(put, del, last); err != nil {
			return err
		}
		if ix.applied != nil {
			ix.applied(put, del)
		}
		ix.setDone(last, nil)
	}
	return ctx.Err()
}

// memoryAt returns the memory of change c: the one its commit handed
// over, or else its record read back.
func (ix *indexer) memoryAt(c storage.Change) (model.Memory, error) {
	if m := ix.handed.take(c.Seq, c.ID); m != nil {
		return *m, nil
	}
	rec, err := c.Record()
	if err != nil {
		return model.Memory{}, err
	}
	var m model.Memory
	if err := json.Unmarshal(rec.Value, &m); err != nil {
		return model.Memory{}, fmt.Errorf("decode memory %s: %w", rec.ID, err)
	}
	return m, nil
}

func (ix *indexer) doneSeq() uint64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.done
}

func (ix *indexer) setDone(seq uint64, err error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.done, ix.err = seq, err
	close(ix.changed)
	ix.changed = make(chan struct{})
}

// waitFor blocks until every change up to seq is searchable.
func (ix *indexer) waitFor(ctx context.Context, seq uint64) error {
	for {
		ix.mu.Lock()
		done, err, changed := ix.done, ix.err, ix.changed
		ix.mu.Unlock()
		if done >= seq {
			return nil
		}
		if err != nil {
			return fmt.Errorf("search index is behind: %w", err)
		}
		signal(ix.hurry)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// maxHanded is the most memories handed over to the indexer and not yet
// indexed; past it, the indexer reads the rest back from storage.
const maxHanded = 4 * indexBatch

// handed holds memories committed lately, by the seq of their commit, as
// materialised for their records: the indexer takes them instead of
// reading and decoding the records again. A change-log entry (seq, id)
// names the version committed at seq, so the memory handed over with it
// is that version.
type handed struct {
	mu sync.Mutex
	at map[handedKey]*model.Memory
}

type handedKey struct {
	seq uint64
	id  string
}

// handOver keeps the memories committed at seq, unless maxHanded are
// kept already.
func (h *handed) handOver(seq uint64, memories []*model.Memory) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = make(map[handedKey]*model.Memory)
	}
	for _, m := range memories {
		if len(h.at) >= maxHanded {
			return
		}
		h.at[handedKey{seq, m.ID}] = m
	}
}

// len returns how many memories are kept.
func (h *handed) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.at)
}

// take returns and forgets the memory handed over with change (seq, id),
// or nil.
func (h *handed) take(seq uint64, id string) *model.Memory {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := handedKey{seq, id}
	m := h.at[k]
	delete(h.at, k)
	return m
}

// drop forgets the memories committed at seq up to done: indexed, or
// superseded by a later change.
func (h *handed) drop(done uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.at {
		if k.seq <= done {
			delete(h.at, k)
		}
	}
}
