package node

import (
	"context"
	"errors"
	"testing"

	"github.com/memmesh/memmesh/api"
)

func TestImpact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	mentions := remember(t, n, api.RememberRequest{Content: "The pool size in internal/db/pool.go must stay below the pgbouncer limit"})
	linked := remember(t, n, api.RememberRequest{Content: "Connections are recycled every 30 minutes"})
	builds := remember(t, n, api.RememberRequest{Content: "Batch jobs open their own connections"})
	far := remember(t, n, api.RememberRequest{Content: "Nightly export runs as a batch job"})
	other := remember(t, n, api.RememberRequest{Content: "Unrelated note about internal/db/poolx.go"})
	for _, l := range []api.LinkRequest{
		{From: linked.ID, Rel: "touches", To: "file:internal/db/pool.go:10-40"},
		{From: builds.ID, Rel: "depends_on", To: linked.ID},
		{From: far.ID, Rel: "part_of", To: builds.ID},
	} {
		if _, err := n.Link(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int{}
	res, err := n.Impact(ctx, api.ImpactRequest{Path: "internal/db/pool.go"})
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range res {
		got[im.Memory.ID] = im.Depth
	}
	want := map[string]int{mentions.ID: 0, linked.ID: 0, builds.ID: 1, far.ID: 2}
	if len(got) != len(want) {
		t.Fatalf("impact = %v, want %v (and not %s)", got, want, other.ID)
	}
	for id, d := range want {
		if g, ok := got[id]; !ok || g != d {
			t.Errorf("%s: depth %d (listed %v), want %d", id, g, ok, d)
		}
	}
	// Depth 1 stops before the part_of hop; a directory covers its files.
	if res, _ := n.Impact(ctx, api.ImpactRequest{Path: "file:internal/db/pool.go", Depth: 1}); len(res) != 3 {
		t.Errorf("depth 1: %d memories, want 3", len(res))
	}
	if res, _ := n.Impact(ctx, api.ImpactRequest{Path: "internal/db/"}); len(res) != 5 {
		t.Errorf("directory: %d memories, want 5", len(res))
	}
	for _, bad := range []api.ImpactRequest{{Path: ""}, {Path: "file:"}, {Path: "a\nb"}, {Path: "x.go", Depth: 9}} {
		if _, err := n.Impact(ctx, bad); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
}
