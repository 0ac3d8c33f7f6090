package node

import (
	"context"
	"slices"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// TestChanges: a client that asks from where its last answer ended hears of
// every memory of its namespace, edge and erasure committed since, and of
// the memories of other namespaces by id only.
func TestChanges(t *testing.T) {
	t.Parallel()
	n := testNode(t, t.TempDir())
	ctx := context.Background()
	start, err := n.Changes(ctx, api.ChangesRequest{After: ^uint64(0), Namespace: "kg"})
	if err != nil || !start.Reset {
		t.Fatalf("changes from beyond the log = %+v, %v; want a reset", start, err)
	}
	a, err := n.Remember(ctx, api.RememberRequest{Namespace: "kg", Content: "Alice works at Acme"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.Remember(ctx, api.RememberRequest{Namespace: "other", Content: "Bob likes tea"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Link(ctx, api.LinkRequest{From: a.ID, Rel: "knows", To: b.ID}); err != nil {
		t.Fatal(err)
	}
	got, err := n.Changes(ctx, api.ChangesRequest{After: start.Next, Namespace: "kg"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Memories) != 1 || got.Memories[0].ID != a.ID || !slices.Equal(got.Elsewhere, []string{b.ID}) ||
		len(got.Edges) != 1 || got.Edges[0].Rel != "knows" || got.More || got.Reset {
		t.Fatalf("changes = %+v", got)
	}
	if again, err := n.Changes(ctx, api.ChangesRequest{After: got.Next, Namespace: "kg"}); err != nil || len(again.Memories)+len(again.Edges) != 0 || again.Next != got.Next {
		t.Fatalf("changes with nothing new = %+v, %v", again, err)
	}

	if _, err := n.Delete(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Unlink(ctx, a.ID, "knows", b.ID); err != nil {
		t.Fatal(err)
	}
	later, err := n.Changes(ctx, api.ChangesRequest{After: got.Next, Namespace: "kg", Limit: 1})
	if err != nil || len(later.Memories) != 1 || later.Memories[0].Status != model.StatusDeleted || !later.More {
		t.Fatalf("changes after a delete, one at a time = %+v, %v", later, err)
	}
	rest, err := n.Changes(ctx, api.ChangesRequest{After: later.Next, Namespace: "kg"})
	if err != nil || len(rest.Edges) != 1 || !rest.Edges[0].Deleted || rest.More {
		t.Fatalf("changes after an unlink = %+v, %v", rest, err)
	}
	if _, err := n.Purge(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	purged, err := n.Changes(ctx, api.ChangesRequest{After: rest.Next, Namespace: "kg"})
	if err != nil || !slices.Contains(purged.Purged, a.ID) {
		t.Fatalf("changes after a purge = %+v, %v", purged, err)
	}
	if _, err := n.Changes(ctx, api.ChangesRequest{Limit: api.MaxChangesLimit + 1}); err == nil {
		t.Error("a limit over the maximum is accepted")
	}
}
