package mesh

import (
	"errors"
	"fmt"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// What a sweep takes out of a document is kept aside (storage's
// Record.Aside: the document as it was, merged with what was kept aside
// of it before), never replicated. A revocation that stands now may not
// stand later: a device revoked by a stolen one is reinstated once a
// member revokes the thief, and the work the sweep removed for the
// thief's revocation, that device's and what others built on it, must
// come back. Other members may no longer hold it (they swept it too), so
// each node puts back what it set aside, once the revocations in force no
// longer refuse it, through the same merge as a peer's document. A purge
// of the memory drops what was kept aside of it (an erasure without
// Aside), and so does a put-back that finds it purged.

// aside returns what to keep aside for a document of kind whose stored
// bytes are doc, about to be rebuilt without refused changes: doc merged
// with what was kept aside of it before. When the two cannot merge (this
// node wrote the document again since, under its actor, with sequence
// numbers a sweep had freed: Automerge refuses two changes of one actor
// and seq), what was kept before stays, and this version's changes built
// on refused work cannot come back.
func (m *Mesh) aside(kind storage.Kind, id string, doc []byte) ([]byte, error) {
	merged, err := m.mergeAside(kind, id, doc)
	if errors.Is(err, errCannotMerge) {
		m.log.Warn("keeping aside what a sweep took out of a document before; this version's cannot join it", "kind", kind.String(), "id", id, "err", err)
		return m.store.Aside(kind, id)
	}
	return merged, err
}

// errCannotMerge marks two versions of a document that Automerge cannot
// merge.
var errCannotMerge = errors.New("versions cannot merge")

// mergeAside merges doc with what was kept aside of it before.
func (m *Mesh) mergeAside(kind storage.Kind, id string, doc []byte) ([]byte, error) {
	old, err := m.store.Aside(kind, id)
	switch {
	case notFound(err):
		return doc, nil
	case err != nil:
		return nil, err
	}
	switch kind {
	case storage.KindPurge:
		a, err := crdt.DecodeTombstone(old)
		if err != nil {
			return nil, err
		}
		b, err := crdt.DecodeTombstone(doc)
		if err != nil {
			return nil, err
		}
		merged, err := crdt.MergeTombstones(a, b)
		if err != nil {
			return nil, err
		}
		return merged.Encode()
	case storage.KindMemory:
		return mergeSaved(m.actor, crdt.LoadMemoryDoc, old, doc)
	case storage.KindEdge:
		return mergeSaved(m.actor, crdt.LoadEdgeDoc, old, doc)
	}
	return mergeSaved(m.actor, crdt.LoadMeshDoc, old, doc)
}

// mergeSaved merges two versions of a document and saves the result.
func mergeSaved[D mergeable[D]](actor string, load func(string, []byte) (D, error), a, b []byte) ([]byte, error) {
	d, err := mergeBytes(actor, load, a, b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCannotMerge, err)
	}
	defer d.Close()
	return d.Save(), nil
}

// putBack merges back what was kept aside that the revocations in force
// no longer refuse, and drops what is then wholly back, or purged.
func (m *Mesh) putBack(v *verdict) error {
	var todo []transport.Entry
	err := m.store.Asides(func(kind storage.Kind, id string, doc []byte) error {
		todo = append(todo, transport.Entry{Kind: byte(kind), ID: id, Doc: append([]byte(nil), doc...)})
		return nil
	})
	if err != nil {
		return err
	}
	// One whose merge fails (see aside) is rejected by the merge, logged,
	// and stays aside.
	for _, e := range todo {
		if err := m.putBackOne(v, e); err != nil {
			return fmt.Errorf("put back %v %s: %w", storage.Kind(e.Kind), e.ID, err)
		}
	}
	return nil
}

// putBackOne puts back one document kept aside.
func (m *Mesh) putBackOne(v *verdict, e transport.Entry) error {
	kind := storage.Kind(e.Kind)
	if kind == storage.KindMemory && m.host.Purged(e.ID) {
		return m.store.DropAside(kind, e.ID)
	}
	whole, some, err := m.allowed(v, e)
	if err != nil || !some {
		return err
	}
	// What the merge refuses (versions it cannot merge, see aside)
	// stays aside; an edge at a purged memory merges as nothing, and goes.
	rejected, err := (replica{m}).applyPart(m.self, []transport.Entry{e})
	if err != nil || !whole || rejected > 0 {
		return err
	}
	return m.store.DropAside(kind, e.ID)
}

// allowed reports whether the revocations in force refuse nothing of a
// document kept aside (whole), and whether they let some of it in.
func (m *Mesh) allowed(v *verdict, e transport.Entry) (whole, some bool, err error) {
	kind := storage.Kind(e.Kind)
	if kind == storage.KindPurge {
		ts, err := crdt.DecodeTombstone(e.Doc)
		if err != nil {
			return false, false, err
		}
		kept, ok := ts.Without(func(p crdt.Purge) bool { return v.refusesPurge(ts.ID, p) })
		return ok && len(kept.Purges) == len(ts.Purges), ok, nil
	}
	kept, refused, err := m.withoutRefused(kind, e.ID, e.Doc)
	return kept != nil && refused.Changes == 0, kept != nil, err
}
