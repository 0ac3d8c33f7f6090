package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// dupNotes is the note on the edge between two copies of a text.
const dupNotes = "the same text, captured twice"

// duplicateLinker gathers the texts of newly indexed memories and links
// the copies among them in the background. Remember stores a text only
// once per namespace, but each machine can check only what it holds: the
// same text captured on two machines before they sync becomes two
// memories. When they meet, each machine links the copies: every later
// copy gets an auto-link related_to the first (by creation time, then id),
// so the brief shows them as one memory with a similar note. Both machines
// make the same edge (its id follows from its ends), so their edges merge
// into one. A link someone removed is not made again.
type duplicateLinker struct {
	mu      sync.Mutex
	pending map[string]bool // content hashes to check
	wake    chan struct{}
}

func newDuplicateLinker() *duplicateLinker {
	return &duplicateLinker{pending: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// note queues the text of a memory the indexer has just indexed.
func (d *duplicateLinker) note(m *model.Memory) {
	if m.Status != model.StatusActive && m.Status != model.StatusStale {
		return
	}
	hash := contentHash(m.Namespace, m.Content)
	d.mu.Lock()
	d.pending[hash] = true
	d.mu.Unlock()
	signal(d.wake)
}

// take returns the queued hashes and empties the queue.
func (d *duplicateLinker) take() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	hashes := make([]string, 0, len(d.pending))
	for h := range d.pending {
		hashes = append(hashes, h)
	}
	clear(d.pending)
	return hashes
}

// runDuplicateLinker links the copies of each queued text until ctx ends.
func (n *Node) runDuplicateLinker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.dups.wake:
		}
		if err := n.linkCopies(n.dups.take()...); err != nil && ctx.Err() == nil {
			n.log.Warn("link copies of the same text", "err", err)
		}
	}
}

// linkCopies links, for each of hashes, every later live memory holding
// its text to the first one, unless that edge exists (or existed: a
// removed link stays removed). The memories of all the hashes are found
// in one pass over the term index (a catch-up queues one hash per memory
// it brings); in the usual case each hash names one memory, and nothing
// more is read. It goes on after a failed hash and returns the first
// error.
func (n *Node) linkCopies(hashes ...string) error {
	ids := make(map[string][]string)
	err := n.store.ScanTerms(storage.KindMemory, "hash", hashes, func(hash, id string) error {
		ids[hash] = append(ids[hash], id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("find copies: %w", err)
	}
	var first error
	for _, hash := range hashes {
		if len(ids[hash]) < 2 {
			continue
		}
		if err := n.linkCopiesOf(ids[hash]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// linkCopiesOf links the copies among ids, the memories that hold one
// text, as linkCopies does.
func (n *Node) linkCopiesOf(ids []string) error {
	var copies []model.Memory
	for _, id := range ids {
		m, err := n.load(id)
		if storageNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("find copies: %w", err)
		}
		if live(&m, n.now()) {
			copies = append(copies, m)
		}
	}
	// A hash names a namespace and a text; the namespace check guards
	// against the (vanishing) chance of two texts sharing one.
	if len(copies) > 0 {
		ns := copies[0].Namespace
		copies = slices.DeleteFunc(copies, func(m model.Memory) bool { return m.Namespace != ns })
	}
	if len(copies) < 2 {
		return nil
	}
	slices.SortFunc(copies, func(a, b model.Memory) int {
		return cmp.Or(a.Provenance.CreatedAt.Compare(b.Provenance.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	first := DisplayID(copies[0].ID)
	for _, c := range copies[1:] {
		if err := n.linkOnce(DisplayID(c.ID), relatedTo, first, 1, dupNotes); err != nil {
			return err
		}
	}
	return nil
}

// linkOnce makes an auto-link by rel from memory from to memory to
// (display ids), unless that edge is there or was removed: a link someone
// removed is not made again.
func (n *Node) linkOnce(from, rel, to string, strength float64, notes string) error {
	id := crdt.EdgeID(from, rel, to)
	unlock, err := n.lockEdge(id, from, to)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := n.store.GetDoc(storage.KindEdge, id); !errors.Is(err, storage.ErrNotFound) {
		return err // there already, or removed by someone: nil; or a read error
	}
	rec, err := n.autoLink(from, rel, to, strength, notes, n.now().UTC())
	if err != nil {
		return err
	}
	if err := n.commitUnlock(unlock, rec); err != nil {
		return writeFailed("store edge", err)
	}
	n.changed()
	return nil
}
