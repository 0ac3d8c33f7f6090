package mesh

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memmesh/memmesh/storage"
)

// privateShare is the share of the store's digest held by documents that
// never leave this machine (memories of local-only namespaces and edges
// that touch one). The digest two devices compare is the store's less
// this share, so local-only namespaces never make two nodes differ.
//
// While any namespace is local-only, an edge at a memory this node does
// not hold is left out too: only the node that holds the memory can tell
// whether it is private, and an edge that reached the others before its
// memory's namespace became local-only would otherwise make them differ
// from it for good. Such an edge joins the digest when its memory arrives.
//
// It is kept current from the change log: each read walks the changes
// since the last one. A change of namespace settings, a tombstone (whose
// erasures leave no change-log entry) or a first read computes it anew
// from the namespace index.
type privateShare struct {
	mu    sync.Mutex
	stale atomic.Bool // set when namespace settings change: recompute
	ready bool
	seq   uint64              // the change-log seq the share covers
	docs  map[docKey][32]byte // the private documents' shares
	xor   [256][32]byte
	// was holds docs as they were before a recomputation: the peers'
	// knowledge hears of each document that becomes private or stops
	// being so (see knowledge).
	was map[docKey][32]byte
	// keys are the keys of docs, read without mu (the peers' knowledge
	// reads them under Mesh.mu, which mu's holders take).
	keys sync.Map
}

// isPrivate reports whether the document is in the private share as last
// brought up to date.
func (p *privateShare) isPrivate(key docKey) bool {
	_, ok := p.keys.Load(key)
	return ok
}

// docKey names a document across kinds.
type docKey struct {
	kind storage.Kind
	id   string
}

// errRecompute stops a walk of the change log that met a change the walk
// cannot follow.
var errRecompute = errors.New("recompute the private share")

// Digest returns the anti-entropy digest of what may go between this
// node and its peers: the store's digest without the documents that
// never leave this machine.
func (m *Mesh) Digest() ([256][32]byte, error) {
	private, err := m.privateXOR()
	if err != nil {
		return [256][32]byte{}, err
	}
	at := m.store.Applied()
	d, err := m.store.Digest()
	if err != nil {
		return d, err
	}
	if m.store.Applied() == at {
		e := &emptyBuckets{at: at}
		for b := range d {
			e.empty[b] = d[b] == [32]byte{}
		}
		m.empty.Store(e)
	}
	for b := range d {
		for i := range d[b] {
			d[b][i] ^= private[b][i]
		}
	}
	return d, nil
}

// emptyBuckets is what the store's digest showed while Applied was at:
// the buckets that held no document (a bucket's share is the XOR of its
// documents' SHA-256 hashes, zero only when it holds none). A pull that
// sent that digest is offered, for a fresh node, every document: none of
// those whose bucket was empty needs a read to know it is lacking.
type emptyBuckets struct {
	at    uint64
	empty [256]bool
}

// surelyLacks reports whether the last digest showed the bucket of a
// document empty and nothing was committed since.
func (m *Mesh) surelyLacks(kind storage.Kind, id string) bool {
	e := m.empty.Load()
	return e != nil && e.at == m.store.Applied() && e.empty[storage.Bucket(kind, id)]
}

// privateXOR returns the private share, brought up to date.
func (m *Mesh) privateXOR() ([256][32]byte, error) {
	p := &m.private
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stale.Swap(false) && p.ready {
		err := m.followPrivate()
		if !errors.Is(err, errRecompute) {
			return p.xor, err
		}
	}
	return p.xor, m.recomputePrivate()
}

// recomputePrivate computes the private share from the namespace index:
// every memory of a local-only namespace and every edge at one.
func (m *Mesh) recomputePrivate() error {
	p := &m.private
	p.was = p.docs
	defer func() {
		// What is no longer private (or was erased).
		for key := range p.was {
			p.keys.Delete(key)
			m.becamePublic(key)
		}
		p.was = nil
	}()
	p.ready, p.seq, p.docs, p.xor = false, m.store.DurableSeq(), make(map[docKey][32]byte), [256][32]byte{}
	m.mu.Lock()
	var local []string
	for ns := range m.localNS {
		local = append(local, ns)
	}
	m.mu.Unlock()
	for _, ns := range local {
		err := m.store.Scan(storage.KindMemory, storage.Term{Field: "ns", Value: ns}, func(id string) error {
			return m.notePrivate(storage.KindMemory, id)
		})
		if err != nil {
			return err
		}
	}
	if len(local) > 0 {
		// Edges at memories this node does not hold (see privateShare).
		err := m.store.All(storage.KindEdge, func(rec storage.Record) error {
			if _, noted := p.docs[docKey{rec.Kind, rec.ID}]; noted {
				return nil
			}
			return m.setPrivate(rec)
		})
		if err != nil {
			return err
		}
	}
	p.ready = true
	return nil
}

// followPrivate applies the changes committed since the share was last
// brought up to date.
func (m *Mesh) followPrivate() error {
	p := &m.private
	m.mu.Lock()
	none := len(m.localNS) == 0
	m.mu.Unlock()
	if none && len(p.docs) == 0 {
		p.seq = m.store.DurableSeq()
		return nil
	}
	last, err := m.store.Changes(p.seq, 0, func(rec storage.Record) error {
		switch rec.Kind {
		case storage.KindPurge:
			return errRecompute
		case storage.KindMemory, storage.KindEdge:
			return m.setPrivate(rec)
		}
		return nil
	})
	if err == nil {
		p.seq = last
	}
	return err
}

// notePrivate reads the stored document and sets its part in the share.
func (m *Mesh) notePrivate(kind storage.Kind, id string) error {
	rec, err := m.store.Get(kind, id)
	if notFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return m.setPrivate(rec)
}

// setPrivate sets the part of one document in the share: its digest share
// when it may not be sent, nothing otherwise. A memory that starts or
// stops being private takes the edges at it along.
func (m *Mesh) setPrivate(rec storage.Record) error {
	p := &m.private
	key := docKey{rec.Kind, rec.ID}
	old, was := p.docs[key]
	if was {
		p.toggle(key, old)
		delete(p.docs, key)
		p.keys.Delete(key)
	}
	private := !m.sendable(rec) || m.endpointMissing(rec)
	if private {
		h := storage.DocHash(rec.Kind, rec.ID, rec.Heads)
		p.toggle(key, h)
		p.docs[key] = h
		p.keys.Store(key, true)
	}
	m.notePrivacy(rec, was, private)
	if rec.Kind != storage.KindMemory || (was == private && !m.anyLocal()) {
		return nil // (a memory may have just arrived: its edges join then)
	}
	for _, field := range []string{"from", "to"} {
		err := m.store.Scan(storage.KindEdge, storage.Term{Field: field, Value: "m-" + rec.ID}, func(id string) error {
			return m.notePrivate(storage.KindEdge, id)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// notePrivacy tells the peers' knowledge of a document that became
// private or stopped being so (was and private: before and now). During
// a recomputation, those no longer private are told at its end.
func (m *Mesh) notePrivacy(rec storage.Record, was, private bool) {
	p := &m.private
	key := docKey{rec.Kind, rec.ID}
	if p.was != nil {
		if _, before := p.was[key]; private && !before && !was {
			m.becamePrivate(rec)
		}
		if private {
			delete(p.was, key)
		}
		return
	}
	switch {
	case private && !was:
		m.becamePrivate(rec)
	case was && !private:
		m.becamePublic(key)
	}
}

// anyLocal reports whether any namespace is local-only.
func (m *Mesh) anyLocal() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.localNS) > 0
}

// endpointMissing reports whether rec is an edge at a memory this node
// does not hold while some namespace is local-only (see privateShare).
func (m *Mesh) endpointMissing(rec storage.Record) bool {
	if rec.Kind != storage.KindEdge || !m.anyLocal() {
		return false
	}
	for _, t := range rec.Terms {
		if id, ok := strings.CutPrefix(t.Value, "m-"); ok && (t.Field == "from" || t.Field == "to") {
			if _, err := m.store.Get(storage.KindMemory, id); notFound(err) {
				return true
			}
		}
	}
	return false
}

// toggle adds or removes a document's digest share h.
func (p *privateShare) toggle(key docKey, h [32]byte) {
	b := &p.xor[storage.Bucket(key.kind, key.id)]
	for i := range b {
		b[i] ^= h[i]
	}
}

// privateChanged marks the private share for recomputation: namespace
// settings changed.
func (m *Mesh) privateChanged() { m.private.stale.Store(true) }
