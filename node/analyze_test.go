package node

import (
	"context"
	"errors"
	"testing"

	"github.com/memmesh/memmesh/api"
)

func TestAnalyze(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	var ids []string
	for _, text := range []string{
		"The API gateway routes every request", "Auth tokens are checked in the gateway",
		"Rate limits live in the gateway config", "Billing reads usage from the gateway logs",
		"Unrelated: the office plant needs water",
	} {
		ids = append(ids, remember(t, n, api.RememberRequest{Namespace: "arch", Content: text}).ID)
	}
	for _, from := range ids[1:4] {
		if _, err := n.Link(ctx, api.LinkRequest{From: from, Rel: "depends_on", To: ids[0]}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := n.Analyze(ctx, api.AnalyzeRequest{Namespace: "arch"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Memories != 5 || a.Edges != 3 {
		t.Fatalf("analysis counts %d memories, %d edges", a.Memories, a.Edges)
	}
	if a.GodNodes[0].ID != ids[0] || a.GodNodes[0].Score != 3 || a.PageRank[0].ID != ids[0] {
		t.Errorf("god nodes %+v, pagerank %+v: want the gateway first", a.GodNodes, a.PageRank)
	}
	if a.GapCount != 1 || a.Gaps[0].ID != ids[4] {
		t.Errorf("gaps %+v", a.Gaps)
	}
	if a.Bridges[0].ID != ids[0] {
		t.Errorf("bridges %+v: want the gateway first", a.Bridges)
	}
	if _, err := n.Analyze(ctx, api.AnalyzeRequest{Limit: 1000}); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("limit 1000: %v", err)
	}
}

func TestReflect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	linkedA := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "Backups of the Postgres cluster run nightly"})
	linkedB := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "Restore drills happen monthly"})
	if _, err := n.Link(ctx, api.LinkRequest{From: linkedB.ID, Rel: "depends_on", To: linkedA.ID}); err != nil {
		t.Fatal(err)
	}
	gap := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "Postgres backups are encrypted before upload to the bucket"})
	refl, err := n.Reflect(ctx, api.ReflectRequest{Namespace: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	if len(refl) != 1 || refl[0].Memory.ID != gap.ID {
		t.Fatalf("reflect = %+v, want the one unlinked memory", refl)
	}
	if len(refl[0].Candidates) == 0 || refl[0].Candidates[0].ID != linkedA.ID {
		t.Fatalf("candidates %+v, want the backups memory first", refl[0].Candidates)
	}
	if _, err := n.Reflect(ctx, api.ReflectRequest{Limit: 51}); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("limit 51: %v", err)
	}
}
