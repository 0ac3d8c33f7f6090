package semantic

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/memmesh/memmesh/embed"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/vector"
)

// probeText is embedded once at start when the provider does not say the
// size of its vectors before it answers (Ollama, OpenAI-compatible
// servers): the stored vectors are tagged with it.
const probeText = "memmesh"

// Run makes the vectors until ctx ends: it opens the stored ones, reads
// every memory once to find those without an up-to-date vector, then
// embeds what Changed reports, a batch at a time. After a failure of the
// embedder it waits, longer each time, and tries again.
func (ix *Index) Run(ctx context.Context) {
	if ix.emb == nil {
		return
	}
	backoff := minBackoff
	for ctx.Err() == nil {
		more, err := ix.step(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			ix.failed(err, false)
			if clock.Sleep(ctx, ix.clk, backoff) != nil {
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		if more {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-ix.wake:
		}
	}
}

// step does one piece of work; more reports that work is left.
func (ix *Index) step(ctx context.Context) (more bool, err error) {
	set, err := ix.open(ctx)
	if err != nil {
		return false, err
	}
	ix.mu.Lock()
	rescan, reindex := ix.rescan, ix.reindex
	ix.mu.Unlock()
	if reindex {
		return true, ix.discard(set)
	}
	if rescan {
		return true, ix.scan(ctx, set)
	}
	if err := ix.deleteGone(set); err != nil {
		return false, err
	}
	batch := ix.take()
	if len(batch) == 0 {
		return false, nil
	}
	if err := ix.embedBatch(ctx, set, batch); err != nil {
		ix.putBack(batch)
		return false, err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.err != nil {
		ix.log.Info("search by meaning available again")
		ix.err, ix.quietTill = nil, time.Time{}
	}
	return len(ix.pending) > 0 || len(ix.gone) > 0, nil
}

// open returns the set of the embedder's model, opening it (and learning
// the model's dims) when needed. Vectors of another model are discarded
// by vector.Open.
func (ix *Index) open(ctx context.Context) (*vector.Set, error) {
	ix.mu.Lock()
	set := ix.set
	ix.mu.Unlock()
	info := ix.emb.Info()
	if set != nil && set.Tag() == info.Tag() {
		return set, nil
	}
	if info.Dims == 0 {
		if _, err := ix.emb.Embed(ctx, []string{probeText}); err != nil {
			return nil, err
		}
		if info = ix.emb.Info(); info.Dims == 0 {
			return nil, fmt.Errorf("%w: the provider did not say the size of its vectors", embed.ErrDims)
		}
	}
	if set != nil {
		set.Close()
	}
	set, err := vector.Open(ix.cfg.Dir, vector.Options{Dims: info.Dims, Tag: info.Tag(), Logger: ix.log})
	if err != nil {
		return nil, fmt.Errorf("semantic: %w", err)
	}
	ix.mu.Lock()
	ix.set, ix.rescan = set, true
	ix.mu.Unlock()
	return set, nil
}

// scan reads every memory: those whose vector is missing or made from
// another text wait for one, and the vectors of memories that are gone
// are deleted.
func (ix *Index) scan(ctx context.Context, set *vector.Set) error {
	known := map[string]uint64{}
	var stale []string
	err := ix.cfg.Source.Each(ctx, func(id, text string) error {
		s := sum(text)
		known[id] = s
		if have, ok := set.Sum(id); !ok || have != s {
			stale = append(stale, id)
		}
		return ctx.Err()
	})
	if err != nil {
		return fmt.Errorf("semantic: read the memories: %w", err)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	// What Changed reported during the scan is newer than what it read.
	maps.Copy(known, ix.known)
	for id := range ix.gone {
		delete(known, id)
	}
	ix.known = known
	for _, id := range stale {
		if _, queued := ix.pending[id]; !queued && len(ix.pending) < maxPending {
			ix.pending[id] = ""
		}
	}
	set.Each(func(id string, _ uint64) bool {
		if _, ok := known[id]; !ok {
			// Gone while no one watched: erased, for all one knows.
			ix.gone[id] = true
		}
		return true
	})
	ix.rescan = false
	ix.log.Info("memories to embed", "total", len(known), "waiting", len(ix.pending))
	return nil
}

// discard deletes every vector, for a reindex, and asks for a scan.
func (ix *Index) discard(set *vector.Set) error {
	var ids []string
	set.Each(func(id string, _ uint64) bool { ids = append(ids, id); return true })
	for chunk := range slices.Chunk(ids, vector.MaxBatch) {
		if err := set.Delete(chunk); err != nil {
			return fmt.Errorf("semantic: reindex: %w", err)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.reindex, ix.rescan = false, true
	clear(ix.pending)
	ix.log.Info("vectors discarded, to be made again", "vectors", len(ids))
	return nil
}

// deleteGone deletes the vectors of the memories gone, and erases them
// from the files when one of them was erased.
func (ix *Index) deleteGone(set *vector.Set) error {
	ix.mu.Lock()
	gone := maps.Clone(ix.gone)
	clear(ix.gone)
	ix.mu.Unlock()
	if len(gone) == 0 {
		return nil
	}
	ids := slices.Collect(maps.Keys(gone))
	remove := set.Delete
	if slices.Contains(slices.Collect(maps.Values(gone)), true) {
		remove = set.Erase
	}
	var err error
	for chunk := range slices.Chunk(ids, vector.MaxBatch) {
		if err = remove(chunk); err != nil {
			break
		}
	}
	if err != nil {
		ix.mu.Lock()
		for id, erase := range gone {
			ix.gone[id] = ix.gone[id] || erase
		}
		ix.mu.Unlock()
		return fmt.Errorf("semantic: %w", err)
	}
	return nil
}

// take removes a batch from the pending memories.
func (ix *Index) take() map[string]string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	batch := map[string]string{}
	for id, text := range ix.pending {
		if len(batch) == embed.MaxBatch {
			break
		}
		batch[id] = text
		delete(ix.pending, id)
	}
	return batch
}

// putBack returns to the pending memories a batch that failed, unless
// they changed since.
func (ix *Index) putBack(batch map[string]string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for id, text := range batch {
		if _, queued := ix.pending[id]; !queued {
			ix.queue(id, text)
		}
	}
}

// embedBatch embeds the memories of batch and stores their vectors.
func (ix *Index) embedBatch(ctx context.Context, set *vector.Set, batch map[string]string) error {
	ids := make([]string, 0, len(batch))
	texts := make([]string, 0, len(batch))
	var fresh []int // of ids: those Changed reported
	for id, text := range batch {
		if text != "" {
			fresh = append(fresh, len(ids))
		} else {
			t, ok, err := ix.cfg.Source.Text(id)
			if err != nil {
				return fmt.Errorf("semantic: read %s: %w", id, err)
			}
			if !ok || t == "" {
				delete(batch, id)
				continue
			}
			text = t
		}
		ids = append(ids, id)
		texts = append(texts, text)
	}
	if len(texts) == 0 {
		return nil
	}
	vecs, err := ix.emb.Embed(ctx, texts)
	if errors.Is(err, embed.ErrBadInput) {
		// Not the provider's fault: retrying does not help.
		ix.log.Error("memories left without a vector", "ids", ids, "err", err)
		clear(batch)
		return nil
	}
	if err != nil {
		return err
	}
	if len(vecs) != len(texts) {
		return fmt.Errorf("%w: %d vectors for %d texts", embed.ErrDims, len(vecs), len(texts))
	}
	items := make([]vector.Item, 0, len(ids))
	var empty []string
	for i, id := range ids {
		if !usable(vecs[i]) {
			empty = append(empty, id)
			continue
		}
		items = append(items, vector.Item{ID: id, Sum: sum(texts[i]), Vec: vecs[i]})
	}
	if len(empty) > 0 {
		// A text of no word the model knows has no direction: it is
		// left to the words, and no longer counted.
		ix.mu.Lock()
		for _, id := range empty {
			delete(ix.known, id)
		}
		ix.mu.Unlock()
	}
	if len(items) == 0 {
		return nil
	}
	if err := set.Put(items); err != nil {
		if errors.Is(err, vector.ErrBadVector) {
			ix.log.Error("the embedder made a vector that cannot be stored", "ids", ids, "err", err)
			clear(batch)
			return nil
		}
		return fmt.Errorf("semantic: %w", err)
	}
	if ix.cfg.Embedded != nil && len(fresh) > 0 && !ix.bulk() {
		var freshIDs []string
		var freshVecs [][]float32
		for _, at := range fresh {
			if usable(vecs[at]) {
				freshIDs, freshVecs = append(freshIDs, ids[at]), append(freshVecs, vecs[at])
			}
		}
		if len(freshIDs) > 0 {
			ix.cfg.Embedded(freshIDs, freshVecs)
		}
	}
	return nil
}

// usable reports whether v can be stored: finite and not all zero.
func usable(v []float32) bool {
	nonzero := false
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
		nonzero = nonzero || x != 0
	}
	return nonzero
}

// bulkPending is the backlog past which the index is catching up (an
// import, a catch-up from a peer) rather than following new writes: it
// does not report the vectors it makes to Config.Embedded then, which
// would search for every memory's neighbours.
const bulkPending = 1000

func (ix *Index) bulk() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return len(ix.pending) >= bulkPending
}
