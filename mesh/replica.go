package mesh

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// replica is the node as the sync protocol sees it. Remote documents take
// the same path as local writes after the merge: one durable batch, then
// the search index.
type replica struct{ m *Mesh }

var _ transport.Replica = replica{}

// syncKinds are the document kinds that replicate, in the order they are
// offered: tombstones before the memories they erase.
var syncKinds = []storage.Kind{storage.KindMesh, storage.KindPurge, storage.KindMemory, storage.KindEdge}

func (r replica) Digest() ([256][32]byte, error)        { return r.m.Digest() }
func (r replica) Position() (transport.Position, error) { return r.m.position() }

func entryOf(rec storage.Record) transport.Entry {
	return transport.Entry{Kind: byte(rec.Kind), ID: rec.ID, Heads: rec.Heads}
}

// errEnd stops a change-log walk.
var errEnd = errors.New("end")

func (r replica) Changed(peer string, after, end uint64, fn func(transport.Entry) error) error {
	_, err := r.m.store.Changes(after, 0, func(rec storage.Record) error {
		if rec.Seq > end {
			return errEnd
		}
		if rec.Erase || !r.m.sendable(rec) {
			return nil
		}
		return fn(entryOf(rec))
	})
	if errors.Is(err, errEnd) {
		return nil
	}
	return err
}

func (r replica) InBuckets(peer string, buckets []byte, fn func(transport.Entry) error) error {
	var in [256]bool
	for _, b := range buckets {
		in[b] = true
	}
	for _, kind := range syncKinds {
		err := r.m.store.All(kind, func(rec storage.Record) error {
			if !in[storage.Bucket(kind, rec.ID)] || !r.m.sendable(rec) {
				return nil
			}
			return fn(entryOf(rec))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// syncKind checks the kind byte of a peer's entry.
func syncKind(b byte) (storage.Kind, error) {
	k := storage.Kind(b)
	if !slices.Contains(syncKinds, k) {
		return 0, fmt.Errorf("unknown document kind %#x", b)
	}
	return k, nil
}

func (r replica) Lacks(e transport.Entry) (bool, error) {
	kind, err := syncKind(e.Kind)
	if err != nil || !crdt.ValidID(e.ID) {
		return false, nil // never ask for what we could not store
	}
	if kind == storage.KindMemory && r.m.host.Purged(e.ID) {
		return false, nil // erased here for good: never ask for it again
	}
	if r.m.surelyLacks(kind, e.ID) {
		return true, nil
	}
	rec, err := r.m.store.Get(kind, e.ID)
	if notFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return !slices.Equal(rec.Heads, slices.Sorted(slices.Values(e.Heads))), nil
}

func (r replica) Docs(peer string, want []transport.Entry) ([]transport.Entry, error) {
	out := make([]transport.Entry, 0, len(want))
	for _, w := range want {
		kind, err := syncKind(w.Kind)
		if err != nil || !crdt.ValidID(w.ID) {
			continue
		}
		rec, err := r.m.store.Get(kind, w.ID)
		if notFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !r.m.sendable(rec) {
			continue
		}
		doc, err := r.m.store.GetDoc(kind, w.ID)
		if err != nil {
			return nil, err
		}
		e := entryOf(rec)
		e.Doc = doc
		out = append(out, e)
	}
	return out, nil
}

// Apply merges documents the peer sent into the local ones, as a pull or
// a push does (see replica.Apply).
func (m *Mesh) Apply(peer string, docs []transport.Entry) error { return replica{m}.Apply(peer, docs) }

// Apply merges a peer's documents into the local ones and commits the
// results in one durable batch (a document sent twice in one batch is
// taken once; anti-entropy brings the other version). A document that
// fails validation or the replication policy is rejected and logged; the
// others are applied, and the error (ErrInvalid, wrapping a
// *transport.RejectedError) lets the sync go on. Tombstones are applied first, in a batch of their
// own, so that the memories and edges they erase are not stored again
// from the same batch.
func (r replica) Apply(peer string, docs []transport.Entry) error {
	r.m.holding(peer, docs)
	isTombstone := func(e transport.Entry) bool { return storage.Kind(e.Kind) == storage.KindPurge }
	rejected := 0
	for _, part := range [][]transport.Entry{
		slices.DeleteFunc(slices.Clone(docs), func(e transport.Entry) bool { return !isTombstone(e) }),
		slices.DeleteFunc(slices.Clone(docs), isTombstone),
	} {
		k, err := r.applyPart(peer, part)
		if err != nil {
			return err
		}
		rejected += k
	}
	if rejected > 0 {
		return fmt.Errorf("%w: %w", api.ErrInvalid, &transport.RejectedError{Peer: peer, Rejected: rejected, Of: len(docs)})
	}
	return nil
}

// applyPart merges documents and commits them. Merging is CPU work in
// Automerge, independent per document: it runs on every core before the
// documents' write locks are taken, so that a local write of one of them
// waits only for the commit, not for the merge of the whole batch. Under
// the locks, a document whose stored version changed since its merge
// (a local write meanwhile) is merged again. Tombstones, which erase
// other documents, are merged under the locks. It returns how many
// documents it rejected.
func (r replica) applyPart(peer string, docs []transport.Entry) (rejected int, err error) {
	if len(docs) == 0 {
		return 0, nil
	}
	m := r.m
	// A sweep starts once every apply that may have merged by an older
	// verdict has committed, so that it scans what they stored.
	m.applying.RLock()
	defer m.applying.RUnlock()
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	tombstones := storage.Kind(docs[0].Kind) == storage.KindPurge
	// This node's own documents, kept aside by a sweep (aside.go), were
	// here before: a namespace made local-only since does not refuse them.
	own := peer == m.self
	merged := make([]mergeResult, len(docs))
	applied := m.store.Applied()
	if !tombstones {
		parallel(len(docs), func(i int) { merged[i] = m.mergeOne(docs[i], own) })
	}
	unlock := m.host.Lock(ids...)
	defer unlock()
	// No commit since the merges read the stored versions: none changed,
	// and a document they found absent is stored as new without a read.
	quiet := !tombstones && m.store.Applied() == applied
	for i, d := range docs {
		if !quiet && (tombstones || m.changedSince(d, merged[i].base)) {
			merged[i] = m.mergeOne(d, own)
		}
		if quiet && merged[i].base == "" && merged[i].err == nil {
			merged[i].rec.NoneAt = applied
		}
	}
	return r.commitMerged(peer, docs, merged, unlock)
}

// mergeOne merges one document from a peer, or one of this node's own
// (own).
func (m *Mesh) mergeOne(e transport.Entry, own bool) (r mergeResult) {
	if storage.Kind(e.Kind) == storage.KindPurge {
		r.rec, r.erase, r.err = m.mergeTombstone(e)
		return r
	}
	return m.merge(e, own)
}

// changedSince reports whether the stored version of e's document is no
// longer base, the heads (headsKey) its merge read.
func (m *Mesh) changedSince(e transport.Entry, base string) bool {
	rec, err := m.store.Get(storage.Kind(e.Kind), e.ID)
	switch {
	case notFound(err):
		return base != ""
	case err != nil:
		return true // merged again, where the error shows
	}
	return headsKey(rec.Heads) != base
}

// commitMerged commits the merges of docs, whose locks the caller holds:
// it releases them with unlock once the batch is applied, and waits for
// its fsync after, so that local writes of those lock stripes do not wait
// for it. It returns how many it rejected.
func (r replica) commitMerged(peer string, docs []transport.Entry, merged []mergeResult, unlock func()) (rejected int, err error) {
	m := r.m
	var recs []storage.Record
	var memories []*model.Memory
	var meshRecs []model.MeshRecord
	var meshDocs [][]byte
	seen := make(map[string]bool)
	for i, d := range docs {
		r := merged[i]
		m.noteRefused(r.refused)
		if r.err != nil {
			rejected++
			m.log.Warn("rejected a document from a peer", "peer", peer, "kind", fmt.Sprintf("%q", d.Kind), "id", d.ID, "err", r.err)
			continue
		}
		// Two tombstones of one batch may erase the same edge.
		for _, e := range r.erase {
			if key := string(e.Kind) + e.ID; !seen[key] {
				seen[key] = true
				recs = append(recs, e)
			}
		}
		key := string(d.Kind) + d.ID
		if r.rec.Kind == 0 {
			continue // nothing new
		}
		if seen[key] {
			// The same document twice in one batch: the second merge did
			// not see the first; leave it to the next anti-entropy pass.
			continue
		}
		seen[key] = true
		recs = append(recs, r.rec)
		if r.memory != nil {
			memories = append(memories, r.memory)
		}
		if r.mesh != nil {
			meshRecs = append(meshRecs, *r.mesh)
			meshDocs = append(meshDocs, r.rec.Doc)
		}
	}
	if len(recs) == 0 {
		return rejected, nil
	}
	p, err := m.store.CommitNoSyncWait(recs...)
	if err == nil {
		// Marked before it can be durable: the pusher, which reads only
		// durable changes, never sees it unmarked.
		m.mu.Lock()
		m.remote[p.Seq()] = true
		m.mu.Unlock()
	}
	unlock()
	if err == nil {
		_, err = p.SyncWait()
	}
	if err != nil {
		return rejected, fmt.Errorf("store documents from %s: %w", peer, err)
	}
	m.mu.Lock()
	for _, mr := range meshRecs {
		m.noteRecordLocked(mr)
	}
	m.mu.Unlock()
	if m.registry.took(meshRecs, meshDocs) {
		m.revocationsChanged()
	}
	m.host.Committed(p.Seq(), memories)
	return rejected, nil
}

type mergeResult struct {
	base    string      // heads (headsKey) of the stored version merged with, "" none
	refused refusedWork // what was left out of the peer's version
	rec     storage.Record
	memory  *model.Memory // the memory rec stores, if it stores one
	mesh    *model.MeshRecord
	erase   []storage.Record // what a tombstone erases
	err     error
}

// parallel calls fn(0..n-1) on as many goroutines as there are CPUs.
func parallel(n int, fn func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// mergeable is what the three document types share for merging.
type mergeable[D any] interface {
	Merge(D) error
	Save() []byte
	Heads() []string
	Close()
}

// mergeBytes loads a peer's document (validated before Automerge sees it)
// and merges it into the stored one, if any.
func mergeBytes[D mergeable[D]](actor string, load func(string, []byte) (D, error), local, remote []byte) (D, error) {
	var zero D
	rd, err := load(actor, remote)
	if err != nil {
		return zero, fmt.Errorf("peer's document: %w", err)
	}
	if local == nil {
		return rd, nil
	}
	ld, err := load(actor, local)
	if err != nil {
		rd.Close()
		return zero, fmt.Errorf("stored document: %w", err)
	}
	err = ld.Merge(rd)
	rd.Close()
	if err != nil {
		ld.Close()
		return zero, err
	}
	return ld, nil
}

// merge turns a peer's document into the record to store. A zero record
// means the merge changed nothing; base is the stored version it merged
// with (headsKey of its heads, "" when none).
func (m *Mesh) merge(e transport.Entry, own bool) (r mergeResult) {
	kind, err := syncKind(e.Kind)
	if err != nil {
		return mergeResult{err: err}
	}
	if !crdt.ValidID(e.ID) {
		return mergeResult{err: fmt.Errorf("invalid id %q", e.ID)}
	}
	if len(e.Doc) == 0 {
		return mergeResult{err: errors.New("no document")}
	}
	if kind == storage.KindMemory && m.host.Purged(e.ID) {
		return mergeResult{} // erased here for good
	}
	remote, refused, err := m.withoutRefused(kind, e.ID, e.Doc)
	r.refused = refused
	switch {
	case err != nil:
		return mergeResult{err: err}
	case remote == nil:
		r.refused.Refused++
		r.err = fmt.Errorf("%w after its revocation (%d changes): nothing else in it", errRevokedAuthor, refused.Changes)
		return r
	}
	old, err := m.store.Get(kind, e.ID)
	found := err == nil
	if err != nil && !notFound(err) {
		return mergeResult{err: err}
	}
	var local []byte
	if found {
		r.base = headsKey(old.Heads)
		if local, r.err = m.store.GetDoc(kind, e.ID); r.err != nil {
			return r
		}
	}
	switch kind {
	case storage.KindPurge:
		r.err = errors.New("a tombstone merges through mergeTombstone")
	case storage.KindMemory:
		r.rec, r.memory, r.err = m.mergeMemory(e.ID, local, remote, own)
	case storage.KindEdge:
		r.rec, r.err = m.mergeEdge(e.ID, local, remote, own)
	case storage.KindMesh:
		r.rec, r.mesh, r.err = m.mergeMesh(e.ID, &old, local, remote)
	}
	if r.err != nil || found && slices.Equal(old.Heads, r.rec.Heads) {
		return mergeResult{base: r.base, refused: r.refused, err: r.err}
	}
	return r
}

// withoutRefused returns a peer's document without the changes revoked
// devices made beyond the frontiers of their revocations, and what
// depends on them (see revocation.go): as it came when it holds none,
// nil when nothing else is left. A revocation record is judged whole
// (see Registry.judge), never cut.
func (m *Mesh) withoutRefused(kind storage.Kind, id string, doc []byte) ([]byte, refusedWork, error) {
	v := m.registry.verdict()
	if len(v.prefixes) == 0 || kind == storage.KindPurge {
		return doc, refusedWork{}, nil
	}
	authors, err := crdt.Authors(doc)
	if err != nil {
		return nil, refusedWork{}, err
	}
	refuse := v.refuses(crdt.DocRef{Kind: byte(kind), ID: id}, authors)
	if refuse == nil {
		return doc, refusedWork{}, nil
	}
	if kind == storage.KindMesh && isRevocation(doc) {
		return doc, refusedWork{}, nil
	}
	out, dropped, err := crdt.Without(doc, refuse)
	if err != nil {
		return nil, refusedWork{}, err
	}
	return out, refusedWork{Device: v.author(authors, refuse), Changes: dropped, Documents: 1}, nil
}

// isRevocation reports whether a mesh document is a revocation record.
func isRevocation(doc []byte) bool {
	d, err := crdt.LoadMeshDoc(crdt.ActorID("reader"), doc)
	if err != nil {
		return false
	}
	defer d.Close()
	r, err := d.Materialize()
	return err == nil && r.What == model.MeshRevocation
}

func (m *Mesh) mergeMemory(id string, local, remote []byte, own bool) (storage.Record, *model.Memory, error) {
	doc, err := mergeBytes(m.actor, crdt.LoadMemoryDoc, local, remote)
	if err != nil {
		return storage.Record{}, nil, err
	}
	defer doc.Close()
	mem, err := doc.Materialize()
	if err != nil {
		return storage.Record{}, nil, err
	}
	if mem.ID != id {
		return storage.Record{}, nil, fmt.Errorf("document of memory %s sent as %s", mem.ID, id)
	}
	if m.LocalOnly(mem.Namespace) && !own {
		return storage.Record{}, nil, fmt.Errorf("namespace %q is local-only on this machine", mem.Namespace)
	}
	rec, err := m.host.MemoryRecord(&mem, savedOr(local, remote, doc.Save))
	return rec, &mem, err
}

// errRevokedAuthor refuses a document written by a revoked device.
var errRevokedAuthor = errors.New("written by a revoked device")

// savedOr returns the bytes to store: a document new to this node is
// stored as received (it passed every check and loaded), a merged one is
// saved again.
func savedOr(local, remote []byte, save func() []byte) []byte {
	if local == nil {
		return remote
	}
	return save()
}

func (m *Mesh) mergeEdge(id string, local, remote []byte, own bool) (storage.Record, error) {
	doc, err := mergeBytes(m.actor, crdt.LoadEdgeDoc, local, remote)
	if err != nil {
		return storage.Record{}, err
	}
	defer doc.Close()
	e, err := doc.Materialize()
	if err != nil {
		return storage.Record{}, err
	}
	if e.ID != id {
		return storage.Record{}, fmt.Errorf("document of edge %s sent as %s", e.ID, id)
	}
	if m.host.PurgedEndpoint(e.From) || m.host.PurgedEndpoint(e.To) {
		return storage.Record{}, nil // erased with its memory, for good
	}
	for _, end := range []string{e.From, e.To} {
		if ns := m.endpointNS(end); m.LocalOnly(ns) && !own {
			return storage.Record{}, fmt.Errorf("edge endpoint %s is in local-only namespace %q", end, ns)
		}
	}
	return m.host.EdgeRecord(&e, savedOr(local, remote, doc.Save))
}

// mergeTombstone checks a peer's tombstone and returns the records that
// store it, merged with ours, and erase its memory and edges here. A
// zero record and no erasures mean nothing is new.
func (m *Mesh) mergeTombstone(e transport.Entry) (storage.Record, []storage.Record, error) {
	ts, err := crdt.DecodeTombstone(e.Doc)
	if err != nil {
		return storage.Record{}, nil, err
	}
	if ts.ID != e.ID {
		return storage.Record{}, nil, fmt.Errorf("tombstone of %s sent as %s", ts.ID, e.ID)
	}
	v := m.registry.verdict()
	ts, ok := ts.Without(func(p crdt.Purge) bool { return v.refusesPurge(ts.ID, p) })
	if !ok {
		return storage.Record{}, nil, fmt.Errorf("%w after its revocation: a purge", errRevokedAuthor)
	}
	recs, err := m.host.TombstoneRecords(ts)
	if err != nil || len(recs) == 0 {
		return storage.Record{}, nil, err
	}
	if recs[0].Kind != storage.KindPurge {
		return storage.Record{}, recs, nil // ours already, with something left to erase
	}
	return recs[0], recs[1:], nil
}

func (m *Mesh) mergeMesh(id string, old *storage.Record, local, remote []byte) (storage.Record, *model.MeshRecord, error) {
	doc, err := mergeBytes(m.actor, crdt.LoadMeshDoc, local, remote)
	if err != nil {
		return storage.Record{}, nil, err
	}
	defer doc.Close()
	r, err := doc.Materialize()
	if err != nil {
		return storage.Record{}, nil, err
	}
	if r.ID != id {
		return storage.Record{}, nil, fmt.Errorf("document of mesh record %s sent as %s", r.ID, id)
	}
	if r.What == model.MeshRevocation {
		if err := m.checkRevocation(r, savedOr(local, remote, doc.Save)); err != nil {
			return storage.Record{}, nil, err
		}
	}
	if local != nil && r.What == model.MeshDevice && !r.Revoked() {
		var was model.MeshRecord
		if json.Unmarshal(old.Value, &was) == nil && was.Revoked() {
			return storage.Record{}, nil, fmt.Errorf("device %s: a revocation cannot be undone", r.Key)
		}
	}
	rec, err := record(&r, savedOr(local, remote, doc.Save))
	return rec, &r, err
}

// checkRevocation refuses a revocation record that is not the one change
// of its revoker. (One by a device that is no member is kept, and stands
// only once the device's registry record is held: see judge.)
func (m *Mesh) checkRevocation(r model.MeshRecord, doc []byte) error {
	if !transport.ValidDeviceID(r.Revokes) || !transport.ValidDeviceID(r.RevokedBy) {
		return fmt.Errorf("revocation %s: of %q by %q: not device ids", r.ID, r.Revokes, r.RevokedBy)
	}
	_, err := revocationAuthor(r, doc)
	return err
}

// sendable applies the replication policy: documents of a local-only
// namespace (and edges that touch one) never leave this machine.
func (m *Mesh) sendable(rec storage.Record) bool {
	m.mu.Lock()
	none := len(m.localNS) == 0
	m.mu.Unlock()
	if none {
		return true
	}
	switch rec.Kind {
	case storage.KindMemory:
		for _, t := range rec.Terms {
			if t.Field == "ns" {
				return !m.LocalOnly(t.Value)
			}
		}
	case storage.KindEdge:
		for _, t := range rec.Terms {
			if (t.Field == "from" || t.Field == "to") && m.LocalOnly(m.endpointNS(t.Value)) {
				return false
			}
		}
	}
	return true
}

// LocalOnly reports whether the namespace ns never leaves this machine.
func (m *Mesh) LocalOnly(ns string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.localNS[ns]
}

// endpointNS is the namespace of a memory endpoint, "" for artefacts and
// memories this node does not have.
func (m *Mesh) endpointNS(end string) string {
	id, ok := strings.CutPrefix(end, "m-")
	if !ok {
		return ""
	}
	rec, err := m.store.Get(storage.KindMemory, id)
	if err != nil {
		return ""
	}
	for _, t := range rec.Terms {
		if t.Field == "ns" {
			return t.Value
		}
	}
	return ""
}
