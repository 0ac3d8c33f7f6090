package node

import (
	"context"
	"os"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/storage"
)

// TestRestoredHomeWritesChangesPeersCanMerge: a home restored from an older
// backup edits a memory its peers hold in a later version; the two
// documents must still merge (Automerge refuses two different changes with
// one actor's same number, for good).
func TestRestoredHomeWritesChangesPeersCanMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	n := testNode(t, home)
	m := remember(t, n, api.RememberRequest{Namespace: "team", Content: "Release on Thursdays"})
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	backup := t.TempDir()
	if err := os.CopyFS(backup, os.DirFS(home)); err != nil {
		t.Fatal(err)
	}

	n = testNode(t, home)
	later := "Release on Thursdays, after the freeze"
	if _, err := n.Update(ctx, m.ID, api.UpdateRequest{Content: &later}); err != nil {
		t.Fatal(err)
	}
	peersHold := docOf(t, n, m.ID) // what the peers pulled before the loss
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	restored := testNode(t, backup)
	other := "Release on Wednesdays"
	if _, err := restored.Update(ctx, m.ID, api.UpdateRequest{Content: &other}); err != nil {
		t.Fatal(err)
	}
	a, err := crdt.LoadMemoryDoc(crdt.ActorID("peer"), peersHold)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := crdt.LoadMemoryDoc(crdt.ActorID("peer"), docOf(t, restored, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Merge(b); err != nil {
		t.Fatalf("the restored home's edit does not merge with what its peers hold: %v", err)
	}
	merged, err := a.Materialize()
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.Conflict) != 2 {
		t.Errorf("merged: %d leaf revisions, want both edits kept as a sync conflict", len(merged.Conflict))
	}
}

func docOf(t *testing.T, n *Node, id string) []byte {
	t.Helper()
	doc, err := n.store.GetDoc(storage.KindMemory, id[len(IDPrefix):])
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
