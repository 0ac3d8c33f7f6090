package mesh

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// BenchmarkRevocationScans measures the two walks over a store that
// revocation adds, over 20,000 memories, a third of them by the revoked
// device: reading what the store holds of a device (Registry.frontier,
// once per revocation) and a sweep that finds nothing to remove (each
// time what revocations refuse changes).
func BenchmarkRevocationScans(b *testing.B) {
	const count = 20_000
	st, err := storage.Open(b.TempDir(), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	m := testMesh(b, st, newFakeClock())
	other := strings.Repeat("B", 52)
	for _, d := range []string{m.self, other} {
		if _, err := m.registry.AddDevice(d, d[:4], m.self); err != nil {
			b.Fatal(err)
		}
	}
	actors := []string{crdt.ActorID(m.self) + "0000000000000001", crdt.ActorID(other) + "0000000000000002", crdt.ActorID("C") + "03"}
	var batch []storage.Record
	for i := range count {
		mem := &model.Memory{ID: crdt.NewID(), Namespace: "bench", Content: fmt.Sprintf("memory %d: %s", i, strings.Repeat("words of a memory ", 20)),
			Kind: "note", Tier: model.TierAgent, Confidence: 0.5, Status: model.StatusActive,
			Provenance: model.Provenance{Device: other}}
		doc, err := crdt.NewMemoryDoc(actors[i%3], mem)
		if err != nil {
			b.Fatal(err)
		}
		batch = append(batch, storage.Record{Kind: storage.KindMemory, ID: mem.ID, Heads: doc.Heads(), Doc: doc.Save(), Value: []byte("{}")})
		doc.Close()
		if len(batch) == 256 || i == count-1 {
			if _, err := st.Commit(batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.Run("frontier", func(b *testing.B) {
		for b.Loop() {
			f, err := m.registry.frontier(other)
			if err != nil || f.Len() < count/3 {
				b.Fatalf("frontier of %d documents (%v), want %d", f.Len(), err, count/3)
			}
		}
	})
	if _, err := m.registry.revoke(other); err != nil {
		b.Fatal(err)
	}
	b.Run("sweep", func(b *testing.B) {
		for b.Loop() {
			if err := st.PutLocalDurable(localSwept, nil); err != nil {
				b.Fatal(err)
			}
			if err := m.Sweep(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
