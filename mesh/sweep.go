package mesh

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// A node may hold work of a device made beyond the frontier of its
// revocation: it took it from the device, or from a member that had not
// heard of the revocation yet, before the revocation reached it. Once the
// revocation arrives, the sweep removes that work, the same way on every
// node: every document holding such changes is rebuilt without them and
// what depends on them (crdt.Without), one that nothing is left of is
// erased, and the device's purges are taken out of tombstones (a
// tombstone left with none is erased, and the memory comes back from the
// members that refused the purge). It runs when what revocations refuse
// changes, and at start when the last sweep did not finish; it records
// the verdict it completed (localSwept) so that a crash runs it again.

// Keys of the mesh's local data kept by the sweep.
const (
	localSwept   = "mesh/swept"    // the key of the verdict the last complete sweep applied
	localRefused = "mesh/refused/" // + device: api.RefusedWork, what this node refused of it
)

// sweepBatch is how many documents one commit of the sweep rewrites.
const sweepBatch = 256

// refusedWork counts what was left out of one document, in the terms of
// api.RefusedWork.
type refusedWork = api.RefusedWork

// author returns the revoked device whose changes refuse selects among a
// document's authors (the first by id when there are several).
func (v *verdict) author(authors map[string]uint64, refuse func(string, uint64) bool) string {
	var devices []string
	for actor, seq := range authors {
		if refuse(actor, seq) {
			devices = append(devices, v.prefixes[actor[:actorPrefix]])
		}
	}
	if len(devices) == 0 {
		return ""
	}
	return slices.Min(devices)
}

// revocationsChanged disconnects every revoked device and starts a
// sweep.
func (m *Mesh) revocationsChanged() {
	if m.ep != nil {
		for device := range m.registry.verdict().devices {
			if device != m.self {
				m.ep.Disconnect(device)
			}
		}
	}
	select {
	case m.sweepWake <- struct{}{}:
	default:
	}
}

// sweepLoop sweeps at start and each time what revocations refuse
// changes.
func (m *Mesh) sweepLoop() {
	for {
		if err := m.Sweep(); err != nil && m.ctx.Err() == nil {
			m.log.Error("removing a revoked device's work", "err", err)
		}
		select {
		case <-m.ctx.Done():
			return
		case <-m.sweepWake:
		}
	}
}

// Sweep removes from the store the work revoked devices made beyond the
// frontiers of their revocations, unless the last sweep applied the
// verdict in force. A stepped mesh's caller runs it after revocations
// arrive.
func (m *Mesh) Sweep() error {
	m.sweepMu.Lock()
	defer m.sweepMu.Unlock()
	v := m.registry.verdict()
	if done, err := m.store.GetLocal(localSwept); err == nil && string(done) == v.key {
		return nil
	} else if err != nil && !notFound(err) {
		return err
	}
	if err := m.migrateRevocations(v); err != nil {
		return err
	}
	v = m.registry.verdict()
	// Applies in flight may have merged by the verdict before this one:
	// wait until they committed, so that the scan sees what they stored
	// (those that start now merge by this one).
	m.applying.Lock()
	//lint:ignore SA2001 a barrier: the applies in flight end before it
	m.applying.Unlock()
	if err := m.putBack(v); err != nil {
		return err
	}
	if len(v.prefixes) > 0 {
		for _, kind := range []storage.Kind{storage.KindMesh, storage.KindMemory, storage.KindEdge} {
			if err := m.sweepKind(v, kind); err != nil {
				return err
			}
		}
		if err := m.sweepPurges(v); err != nil {
			return err
		}
	}
	return m.store.PutLocalDurable(localSwept, []byte(v.key))
}

// migrateRevocations writes, for each device this one revoked before
// revocations were records of their own (its device record carries the
// revocation), a revocation record with this node's frontier of it.
func (m *Mesh) migrateRevocations(v *verdict) error {
	var todo []string
	m.mu.Lock()
	for device, r := range m.devices {
		if r.Revoked() && r.RevokedBy == m.self && v.first(device) == nil {
			todo = append(todo, device)
		}
	}
	m.mu.Unlock()
	for _, device := range todo {
		if _, err := m.registry.revoke(device); err != nil {
			return fmt.Errorf("record the revocation of %s: %w", device, err)
		}
	}
	return nil
}

// sweepKind rebuilds the documents of kind that hold refused changes.
func (m *Mesh) sweepKind(v *verdict, kind storage.Kind) error {
	var ids []string
	err := m.store.Docs(kind, func(id string, doc []byte) error {
		authors, err := crdt.Authors(doc)
		if err != nil {
			return fmt.Errorf("%v %s: %w", kind, id, err)
		}
		if v.refuses(crdt.DocRef{Kind: byte(kind), ID: id}, authors) != nil {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for batch := range slices.Chunk(ids, sweepBatch) {
		if err := m.sweepDocs(kind, batch); err != nil {
			return err
		}
	}
	return nil
}

// sweepDocs rebuilds documents of kind without their refused changes and
// commits them in one batch, under their locks.
func (m *Mesh) sweepDocs(kind storage.Kind, ids []string) error {
	unlock := m.host.Lock(ids...)
	defer unlock()
	var recs []storage.Record
	var meshRecs []model.MeshRecord
	var meshDocs [][]byte
	var erasedMesh []model.MeshRecord
	work := make(map[string]*refusedWork)
	for _, id := range ids {
		doc, err := m.store.GetDoc(kind, id)
		if notFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		kept, refused, err := m.withoutRefused(kind, id, doc)
		if err != nil {
			return fmt.Errorf("%v %s: %w", kind, id, err)
		}
		if refused.Changes == 0 {
			continue // a revocation, or what changed since the scan
		}
		w := work[refused.Device]
		if w == nil {
			w = &refusedWork{Device: refused.Device}
			work[refused.Device] = w
		}
		w.Changes += refused.Changes
		w.Documents++
		aside, err := m.aside(kind, id, doc)
		if err != nil {
			return fmt.Errorf("%v %s: keep it aside: %w", kind, id, err)
		}
		if kept == nil {
			w.Erased++
			if kind == storage.KindMesh {
				if r, err := m.storedMesh(id); err == nil {
					erasedMesh = append(erasedMesh, r)
				}
			}
			recs = append(recs, storage.Record{Kind: kind, ID: id, Erase: true, Logged: true, Aside: aside})
			continue
		}
		rec, mr, err := m.rebuilt(kind, id, kept)
		if err != nil {
			return fmt.Errorf("%v %s without a revoked device's changes: %w", kind, id, err)
		}
		rec.Aside = aside
		recs = append(recs, rec)
		if mr != nil {
			meshRecs, meshDocs = append(meshRecs, *mr), append(meshDocs, kept)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	seq, err := m.store.Commit(recs...)
	if err != nil {
		return writeFailed("remove a revoked device's changes", err)
	}
	for _, r := range erasedMesh {
		m.forgetRecord(r)
	}
	for _, r := range meshRecs {
		m.noteRecord(r)
	}
	m.registry.forget(erasedMesh)
	if m.registry.took(meshRecs, meshDocs) {
		m.revocationsChanged()
	}
	for _, w := range work {
		m.noteRefused(*w)
	}
	m.host.Committed(seq, nil)
	return nil
}

// rebuilt builds the record of a document of kind from its bytes, as a
// merge does; for a mesh record, also the record itself.
func (m *Mesh) rebuilt(kind storage.Kind, id string, doc []byte) (storage.Record, *model.MeshRecord, error) {
	switch kind {
	case storage.KindMemory:
		d, err := crdt.LoadMemoryDoc(m.actor, doc)
		if err != nil {
			return storage.Record{}, nil, err
		}
		defer d.Close()
		mem, err := d.Materialize()
		if err != nil {
			return storage.Record{}, nil, err
		}
		rec, err := m.host.MemoryRecord(&mem, doc)
		return rec, nil, err
	case storage.KindEdge:
		d, err := crdt.LoadEdgeDoc(m.actor, doc)
		if err != nil {
			return storage.Record{}, nil, err
		}
		defer d.Close()
		e, err := d.Materialize()
		if err != nil {
			return storage.Record{}, nil, err
		}
		rec, err := m.host.EdgeRecord(&e, doc)
		return rec, nil, err
	}
	d, err := crdt.LoadMeshDoc(m.actor, doc)
	if err != nil {
		return storage.Record{}, nil, err
	}
	defer d.Close()
	r, err := d.Materialize()
	if err != nil {
		return storage.Record{}, nil, err
	}
	rec, err := record(&r, doc)
	return rec, &r, err
}

// storedMesh reads a stored mesh record.
func (m *Mesh) storedMesh(id string) (model.MeshRecord, error) {
	var r model.MeshRecord
	rec, err := m.store.Get(storage.KindMesh, id)
	if err == nil {
		err = json.Unmarshal(rec.Value, &r)
	}
	return r, err
}

// sweepPurges takes the refused purges out of every tombstone.
func (m *Mesh) sweepPurges(v *verdict) error {
	var todo []crdt.Tombstone
	err := m.store.All(storage.KindPurge, func(rec storage.Record) error {
		ts, err := crdt.DecodeTombstone(rec.Value)
		if err != nil {
			return fmt.Errorf("tombstone %s: %w", rec.ID, err)
		}
		if slices.ContainsFunc(ts.Purges, func(p crdt.Purge) bool { return v.refusesPurge(ts.ID, p) }) {
			todo = append(todo, ts)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, ts := range todo {
		if err := m.sweepPurge(v, ts); err != nil {
			return err
		}
	}
	return nil
}

// sweepPurge rewrites one tombstone without its refused purges, or
// erases it when none is left: the memory is then no longer purged here,
// and comes back from the members that refused the purge.
func (m *Mesh) sweepPurge(v *verdict, ts crdt.Tombstone) error {
	unlock := m.host.Lock(ts.ID)
	defer unlock()
	var devices []string
	kept, ok := ts.Without(func(p crdt.Purge) bool {
		if v.refusesPurge(ts.ID, p) {
			devices = append(devices, p.By)
			return true
		}
		return false
	})
	old, err := ts.Encode()
	if err != nil {
		return err
	}
	aside, err := m.aside(storage.KindPurge, ts.ID, old)
	if err != nil {
		return err
	}
	rec := storage.Record{Kind: storage.KindPurge, ID: ts.ID, Erase: true, Logged: true, Aside: aside}
	if ok {
		data, err := kept.Encode()
		if err != nil {
			return err
		}
		heads, err := kept.Heads()
		if err != nil {
			return err
		}
		rec = storage.Record{Kind: storage.KindPurge, ID: ts.ID, Heads: heads, Value: data, Doc: data, Aside: aside}
	}
	seq, err := m.store.Commit(rec)
	if err != nil {
		return writeFailed("remove a revoked device's purge", err)
	}
	for _, device := range devices {
		m.noteRefused(refusedWork{Device: device, Purges: 1})
	}
	m.host.Committed(seq, nil)
	return nil
}

// noteRefused adds what was refused of a device's work to what this node
// keeps of it (local data, shown by doctor and the machines page).
func (m *Mesh) noteRefused(w refusedWork) {
	if w.Device == "" || w.Changes+w.Erased+w.Purges+w.Refused == 0 {
		return
	}
	m.refusedMu.Lock()
	defer m.refusedMu.Unlock()
	var total refusedWork
	if data, err := m.store.GetLocal(localRefused + w.Device); err == nil {
		json.Unmarshal(data, &total) // unreadable counts start again
	}
	total.Device = w.Device
	total.Changes += w.Changes
	total.Documents += w.Documents
	total.Erased += w.Erased
	total.Purges += w.Purges
	total.Refused += w.Refused
	total.Last = m.clock.Now().UTC()
	data, err := json.Marshal(total)
	if err == nil {
		err = m.store.PutLocal(localRefused+w.Device, data)
	}
	if err != nil && !errors.Is(err, storage.ErrDiskFull) {
		m.log.Warn("counting a revoked device's refused work", "device", w.Device, "err", err)
	}
}
