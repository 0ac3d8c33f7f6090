package mesh

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// TestPrivateShareFollowsChanges makes random changes to memories of a
// local-only namespace and a shared one (edits, moves between them, edges
// between them, erasures with their tombstones, settings changed): after
// each, the digest the mesh compares must be the one computed anew, and
// once nothing is local-only, the store's.
func TestPrivateShareFollowsChanges(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	st := testStore(t)
	m := testMesh(t, st, nil)
	m.noteRecord(model.MeshRecord{What: model.MeshNamespace, Key: "private", Sync: model.SyncLocal})

	memory := func(id, ns string, v int) storage.Record {
		return storage.Record{Kind: storage.KindMemory, ID: id, Heads: []string{fmt.Sprintf("%s-%d", id, v)},
			Value: []byte("{}"), Terms: []storage.Term{{Field: "ns", Value: ns}}}
	}
	edge := func(from, to string, v int) storage.Record {
		return storage.Record{Kind: storage.KindEdge, ID: from + "." + to, Heads: []string{fmt.Sprintf("%s.%s-%d", from, to, v)},
			Value: []byte("{}"), Terms: []storage.Term{{Field: "from", Value: "m-" + from}, {Field: "to", Value: "m-" + to}}}
	}
	ids := []string{"a", "b", "c", "d", "e", "f"}
	for step := range 300 {
		var recs []storage.Record
		id, other := ids[rng.IntN(len(ids))], ids[rng.IntN(len(ids))]
		switch rng.IntN(10) {
		case 0, 1, 2, 3:
			recs = append(recs, memory(id, []string{"private", "shared"}[rng.IntN(2)], step))
		case 4, 5, 6:
			if id != other {
				recs = append(recs, edge(id, other, step))
			}
		case 7:
			recs = append(recs, storage.Record{Kind: storage.KindPurge, ID: id, Heads: []string{fmt.Sprint(step)}, Value: []byte("{}")},
				storage.Record{Kind: storage.KindMemory, ID: id, Erase: true})
		case 8:
			sync := []string{model.SyncLocal, model.SyncAll}[rng.IntN(2)]
			m.noteRecord(model.MeshRecord{What: model.MeshNamespace, Key: "private", Sync: sync})
		case 9:
			if _, err := m.Digest(); err != nil { // read between changes
				t.Fatal(err)
			}
		}
		if len(recs) > 0 {
			if _, err := st.Commit(recs...); err != nil {
				t.Fatal(err)
			}
		}
		followed, err := m.Digest()
		if err != nil {
			t.Fatal(err)
		}
		m.privateChanged()
		anew, err := m.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if followed != anew {
			t.Fatalf("step %d: the digest followed from the change log differs from the one computed anew", step)
		}
		whole, err := st.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if !m.LocalOnly("private") && anew != whole {
			t.Fatalf("step %d: nothing is local-only, yet the digest is not the store's", step)
		}
	}
}

// A document whose bucket the last digest showed empty is lacking without
// a read, but only until the next commit: then Lacks reads the store.
func TestLacksAfterADigest(t *testing.T) {
	st := testStore(t)
	m := testMesh(t, st, nil)
	m.host = &recordHost{}
	r := replica{m}
	id := crdt.NewID()
	entry := transport.Entry{Kind: byte(storage.KindMemory), ID: id, Heads: []string{"h1"}}
	if _, err := m.Digest(); err != nil {
		t.Fatal(err)
	}
	if lacks, err := r.Lacks(entry); err != nil || !lacks {
		t.Fatalf("Lacks on an empty store = %v, %v; want true", lacks, err)
	}
	if _, err := st.Commit(storage.Record{Kind: storage.KindMemory, ID: id, Heads: []string{"h1"}, Value: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if lacks, err := r.Lacks(entry); err != nil || lacks {
		t.Fatalf("Lacks of a stored version after the digest = %v, %v; want false", lacks, err)
	}
	entry.Heads = []string{"h2"}
	if lacks, err := r.Lacks(entry); err != nil || !lacks {
		t.Fatalf("Lacks of another version = %v, %v; want true", lacks, err)
	}
}
