package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// purgedError is the error of a read or change of a purged memory. It
// matches ErrPurged and ErrNotFound.
type purgedError struct{ p api.Purged }

func (e *purgedError) Error() string {
	return fmt.Sprintf("memory %s was purged on %s by device %s: its content is erased on every machine",
		e.p.ID, e.p.At.UTC().Format("2006-01-02 15:04 UTC"), purgedBy(e.p))
}

func (e *purgedError) Is(target error) bool {
	return target == api.ErrPurged || target == api.ErrNotFound
}

// purgedBy names the device that purged: its short id and its name.
func purgedBy(p api.Purged) string {
	d := p.By
	if len(d) > 7 {
		d = d[:7]
	}
	if p.ByName != "" {
		d += " (" + p.ByName + ")"
	}
	return d
}

// Purge erases a memory for good, with every revision, its links and what
// the node's files still held of it, and leaves a tombstone that
// replicates: every peer erases it the same way, and no copy arriving
// later (from a peer that was offline, or an import) brings it back. It
// returns once this node's files no longer hold the memory. Purging a
// purged memory again reports the first purge.
func (n *Node) Purge(ctx context.Context, ref string) (api.Purged, error) {
	id, err := n.resolve(ref)
	var purged *purgedError
	if errors.As(err, &purged) {
		purged.p.Already = true
		return purged.p, nil
	}
	if err != nil {
		return api.Purged{}, err
	}
	ts := crdt.NewTombstone(id, n.now().UTC(), n.id.DeviceID)
	start := time.Now()
	edges, err := n.commitTombstone(ts)
	if err != nil {
		return api.Purged{}, err
	}
	n.log.Info("memory purged", "id", DisplayID(id), "edges", edges, "took", time.Since(start).Round(time.Millisecond))
	if err := n.expunge(ctx); err != nil {
		return api.Purged{}, fmt.Errorf("memory %s is purged, but this node's files may still hold it until its next start: %w", DisplayID(id), err)
	}
	// What is stored: to the millisecond, and an earlier purge made
	// elsewhere wins.
	err = n.purgedMemory(id)
	if !errors.As(err, &purged) {
		return api.Purged{}, fmt.Errorf("read the tombstone of %s: %w", DisplayID(id), err)
	}
	purged.p.Edges = edges
	return purged.p, nil
}

// commitTombstone stores a tombstone (merged with the one stored, if any)
// and erases the memory and its edges in the same batch. It returns how
// many edges it erased.
func (n *Node) commitTombstone(ts crdt.Tombstone) (int, error) {
	unlock := n.lock(ts.ID)
	defer unlock()
	recs, edges, err := n.tombstoneRecords(ts)
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	if err := n.commitUnlock(unlock, recs...); err != nil {
		return 0, fmt.Errorf("purge %s: %w", DisplayID(ts.ID), storeError(err))
	}
	n.changed()
	return edges, nil
}

// tombstoneRecords returns the records that store ts, merged with the
// stored tombstone, and erase what it covers: its memory and every edge
// at the memory, live or not. It returns no records when there is
// nothing new to store or erase. The caller holds the memory's lock.
func (n *Node) tombstoneRecords(ts crdt.Tombstone) (recs []storage.Record, edges int, err error) {
	old, err := n.store.Get(storage.KindPurge, ts.ID)
	found := err == nil
	if err != nil && !storageNotFound(err) {
		return nil, 0, err
	}
	if found {
		prev, err := crdt.DecodeTombstone(old.Value)
		if err != nil {
			return nil, 0, fmt.Errorf("stored tombstone of %s: %w", DisplayID(ts.ID), err)
		}
		if ts, err = crdt.MergeTombstones(prev, ts); err != nil {
			return nil, 0, err
		}
	}
	rec, err := tombstoneRecord(ts)
	if err != nil {
		return nil, 0, err
	}
	if found && slices.Equal(old.Heads, rec.Heads) {
		rec = storage.Record{} // stored already
	}
	erase, err := n.erasures(ts.ID)
	if err != nil {
		return nil, 0, err
	}
	edges = len(erase)
	// The memory goes, and what a sweep kept aside of it (see mesh's
	// aside.go) with it.
	stored, err := n.holdsAny(storage.KindMemory, ts.ID)
	if err != nil {
		return nil, 0, err
	}
	if stored {
		erase = append(erase, storage.Record{Kind: storage.KindMemory, ID: ts.ID, Erase: true})
	}
	if rec.Kind != 0 {
		recs = append(recs, rec)
	}
	return append(recs, erase...), edges, nil
}

// holdsAny reports whether the store holds a document, or something kept
// aside for it.
func (n *Node) holdsAny(kind storage.Kind, id string) (bool, error) {
	for _, get := range []func(storage.Kind, string) error{
		func(k storage.Kind, id string) error { _, err := n.store.Get(k, id); return err },
		func(k storage.Kind, id string) error { _, err := n.store.Aside(k, id); return err },
	} {
		switch err := get(kind, id); {
		case err == nil:
			return true, nil
		case !storageNotFound(err):
			return false, err
		}
	}
	return false, nil
}

// tombstoneRecord is the storage record of a tombstone: its bytes are both
// the document that replicates and the value that reads decode.
func tombstoneRecord(ts crdt.Tombstone) (storage.Record, error) {
	data, err := ts.Encode()
	if err != nil {
		return storage.Record{}, err
	}
	heads, err := ts.Heads()
	if err != nil {
		return storage.Record{}, err
	}
	return storage.Record{Kind: storage.KindPurge, ID: ts.ID, Heads: heads, Value: data, Doc: data}, nil
}

// textTerms are the storage term fields whose values hold what a user or
// agent wrote (tags, the files and URLs a text mentions, session ids, edge
// endpoints): an expunge compacts their keys. The others hold hashes,
// enumerations and namespace names.
var textTerms = []string{"tag", "touch", fieldThread, "from", "to"}

// erasures returns the erasures of every stored edge with the memory id
// at one end, deleted ones included (which keep no adjacency terms, hence
// the scan of every edge; only records that hold the id are decoded).
func (n *Node) erasures(id string) ([]storage.Record, error) {
	endpoint := DisplayID(id)
	var out []storage.Record
	err := n.store.All(storage.KindEdge, func(rec storage.Record) error {
		if !bytes.Contains(rec.Value, []byte(endpoint)) {
			return nil
		}
		var e struct{ From, To string }
		if err := json.Unmarshal(rec.Value, &e); err != nil {
			return fmt.Errorf("decode edge %s: %w", rec.ID, err)
		}
		if e.From == endpoint || e.To == endpoint {
			out = append(out, storage.Record{Kind: storage.KindEdge, ID: rec.ID, Erase: true})
		}
		return nil
	})
	return out, err
}

// purgedMemory returns the purge error of id when a tombstone holds it, or
// nil.
func (n *Node) purgedMemory(id string) error {
	rec, err := n.store.Get(storage.KindPurge, id)
	if storageNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ts, err := crdt.DecodeTombstone(rec.Value)
	if err != nil {
		return fmt.Errorf("stored tombstone of %s: %w", DisplayID(id), err)
	}
	return &purgedError{n.purgedView(ts)}
}

// purged reports whether a tombstone holds the memory id.
func (n *Node) purged(id string) bool {
	_, err := n.store.Get(storage.KindPurge, id)
	return err == nil
}

// purgedEndpoint reports whether an edge endpoint is a purged memory.
func (n *Node) purgedEndpoint(end string) bool {
	id, ok := strings.CutPrefix(end, IDPrefix)
	return ok && crdt.ValidID(id) && n.purged(id)
}

func (n *Node) purgedView(ts crdt.Tombstone) api.Purged {
	first := ts.First()
	return api.Purged{ID: DisplayID(ts.ID), At: first.At, By: first.By, ByName: n.deviceName(first.By)}
}

// deviceName is the registry's name of a device, or "".
func (n *Node) deviceName(device string) string {
	rec, err := n.store.Get(storage.KindMesh, crdt.MeshID(model.MeshDevice, device))
	if err != nil {
		return ""
	}
	var r model.MeshRecord
	if json.Unmarshal(rec.Value, &r) != nil {
		return ""
	}
	return r.Name
}

// expungeRetry is how long the expunger waits after a failure.
const expungeRetry = time.Minute

// expunge removes from the search index's and storage's files what they
// still hold of erased documents, once the index has dropped them. It
// does nothing when no erasure is pending.
func (n *Node) expunge(ctx context.Context) error {
	n.expungeMu.Lock()
	defer n.expungeMu.Unlock()
	if !n.store.ErasePending() {
		return nil
	}
	start := time.Now()
	// Both rewrites need room: on a full disk they wait for space.
	if err := n.store.CheckSpace(); err != nil {
		return err
	}
	if err := n.indexer.waitFor(ctx, n.store.DurableSeq()); err != nil {
		return err
	}
	if err := n.index.Expunge(ctx); err != nil {
		return err
	}
	indexed := time.Now()
	if err := n.store.Expunge(ctx); err != nil {
		return err
	}
	n.log.Info("erased memories removed from the files", "index", indexed.Sub(start).Round(time.Millisecond), "storage", time.Since(indexed).Round(time.Millisecond))
	return nil
}

// closeExpungeTimeout bounds how long Close spends on a pending expunge;
// what is left is done at the next start.
const closeExpungeTimeout = 10 * time.Second

// expungeBeforeClose finishes a pending expunge (a tombstone just received,
// say) before the node stops, so that a stopped node's files do not hold
// what was erased. It needs the indexer, so it runs before the background
// work stops.
func (n *Node) expungeBeforeClose() {
	if n.cancel == nil || !n.store.ErasePending() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeExpungeTimeout)
	defer cancel()
	if err := n.expunge(ctx); err != nil {
		n.log.Warn("erased memories not yet removed from the files; the next start does it", "err", err)
	}
}

// runExpunger expunges in the background what peers' tombstones, imports
// and a crash before an expunge left to do.
func (n *Node) runExpunger(ctx context.Context) {
	retry := n.clock.NewTimer(0) // an erasure may be pending from before a crash
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.expungeWake:
		case <-retry.Chan():
		}
		if err := n.expunge(ctx); err != nil && ctx.Err() == nil {
			n.log.Error("removing erased memories from the files failed; retrying", "err", err, "retry", expungeRetry)
			retry.Reset(expungeRetry)
		}
	}
}
