package node

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

func TestMoveOutOfALocalNamespaceLeavesItsHistoryBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	local := model.SyncLocal
	if _, err := n.SetNamespace(ctx, "private", api.NamespaceChange{Sync: &local}); err != nil {
		t.Fatal(err)
	}
	m := remember(t, n, api.RememberRequest{Namespace: "private", Content: "Draft: the vendor quote is 40k, do not share"})
	other := remember(t, n, api.RememberRequest{Namespace: "team", Content: "Vendor shortlist for the storage migration"})
	if _, err := n.Link(ctx, api.LinkRequest{From: m.ID, Rel: "part_of", To: other.ID}); err != nil {
		t.Fatal(err)
	}
	final := "We picked the vendor with the lowest quote"
	if _, err := n.Update(ctx, m.ID, api.UpdateRequest{Content: &final}); err != nil {
		t.Fatal(err)
	}

	team := "team"
	moved, err := n.Update(ctx, m.ID, api.UpdateRequest{Namespace: &team})
	if err != nil {
		t.Fatal(err)
	}
	if moved.ID == m.ID || moved.Replaces != m.ID {
		t.Fatalf("moved = %s replacing %q, want a new memory replacing %s", moved.ID, moved.Replaces, m.ID)
	}
	if moved.Namespace != "team" || moved.Content != final || len(moved.Revisions) != 1 {
		t.Errorf("moved: namespace %q, content %q, %d revisions; want team, the current text, one revision", moved.Namespace, moved.Content, len(moved.Revisions))
	}
	doc, err := n.store.GetDoc(storage.KindMemory, moved.ID[len(IDPrefix):])
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(doc, []byte("40k")) {
		t.Error("the new memory's document holds the text written while it was private")
	}
	if _, err := n.Get(ctx, m.ID); !errors.Is(err, api.ErrPurged) {
		t.Errorf("the old memory: %v, want purged", err)
	}
	edges, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{moved.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(edges) != 1 || edges[0].From != moved.ID || edges[0].Rel != "part_of" || edges[0].To != other.ID {
		t.Errorf("edges of the moved memory = %+v, want its part_of link, made again", edges)
	}

	// Between namespaces that both sync, a move keeps the memory.
	ops := "ops"
	same, err := n.Update(ctx, moved.ID, api.UpdateRequest{Namespace: &ops})
	if err != nil {
		t.Fatal(err)
	}
	if same.ID != moved.ID || same.Replaces != "" {
		t.Errorf("a move between shared namespaces made %s (replaces %q), want %s kept", same.ID, same.Replaces, moved.ID)
	}
}
