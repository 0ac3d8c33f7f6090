package node

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// staleCluster stores three stale memories of ns that say related things
// (the first two in similar words, the third linked to the first), one
// unrelated stale memory and one fresh memory that depends on the first of
// the three. It returns the three and the fresh one.
func staleCluster(t *testing.T, n *Node, ns string) ([]api.RememberResult, api.RememberResult) {
	t.Helper()
	old := time.Now().AddDate(0, 0, -90)
	var members []api.RememberResult
	for _, text := range []string{
		"Uploads retry three times with exponential backoff starting at 200ms",
		"Uploads retry with exponential backoff; the cap is 5 seconds",
		"Only 5xx responses are retried; a 4xx fails at once",
	} {
		members = append(members, remember(t, n, api.RememberRequest{Namespace: ns, Content: text, Tier: model.TierHuman, At: old}))
	}
	remember(t, n, api.RememberRequest{Namespace: ns, Content: "The staging database is restored every Sunday night", Tier: model.TierHuman, At: old})
	if _, err := n.Link(context.Background(), api.LinkRequest{From: members[2].ID, Rel: "related_to", To: members[0].ID}); err != nil {
		t.Fatal(err)
	}
	user := remember(t, n, api.RememberRequest{Namespace: ns, Content: "The image service calls the upload client", Tier: model.TierHuman})
	if _, err := n.Link(context.Background(), api.LinkRequest{From: user.ID, Rel: "depends_on", To: members[0].ID, Notes: "shares its retry policy"}); err != nil {
		t.Fatal(err)
	}
	return members, user
}

func TestCompaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	members, user := staleCluster(t, n, "api")
	digest, err := n.store.Digest()
	if err != nil {
		t.Fatal(err)
	}

	plan, err := n.CompactCandidates(ctx, api.CompactRequest{Namespace: "api"})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Clusters) != 1 || len(plan.Clusters[0].Members) != 3 || plan.Prompt == "" {
		t.Fatalf("plan = %+v, want one cluster of the three upload memories", plan)
	}
	var ids []string
	for _, m := range plan.Clusters[0].Members {
		ids = append(ids, m.Memory.ID)
		if len(m.Reasons) == 0 {
			t.Errorf("member %s without its stale reasons", m.Memory.ID)
		}
	}
	for _, m := range members {
		if !slices.Contains(ids, m.ID) {
			t.Errorf("cluster %v misses %s", ids, m.ID)
		}
	}
	if after, _ := n.store.Digest(); after != digest {
		t.Fatal("finding clusters changed the store")
	}

	res, err := n.CompactApply(ctx, api.CompactApplyRequest{Members: ids, Title: "Upload retry policy",
		Summary: "Uploads retry up to three times with exponential backoff from 200ms, capped at 5s, on 5xx only."})
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summary
	if sum.Kind != "summary" || sum.Status != model.StatusActive || !sum.ExpiresAt.IsZero() || len(res.Members) != 3 {
		t.Fatalf("summary %+v, members %v", sum, res.Members)
	}
	for _, id := range ids {
		m, err := n.Get(ctx, id)
		if err != nil || m.Status != model.StatusCompacted || DisplayID(m.CompactedInto) != sum.ID {
			t.Fatalf("member %s: status %s into %q, %v", id, m.Status, m.CompactedInto, err)
		}
	}
	if len(res.Repointed) != 1 || res.Repointed[0].From != user.ID || res.Repointed[0].To != sum.ID || res.Repointed[0].Origin != OriginCompaction {
		t.Fatalf("repointed = %+v, want the depends_on edge moved to the summary", res.Repointed)
	}
	walk, err := n.Traverse(ctx, api.TraverseRequest{Start: user.ID, Direction: api.Out, Rels: []string{"depends_on"}})
	if err != nil || len(walk.Nodes) != 2 || walk.Nodes[1].ID != sum.ID {
		t.Fatalf("depends_on from the user = %+v, %v; want the summary only", walk.Nodes, err)
	}
	hits, err := n.Search(ctx, api.SearchRequest{Query: "uploads retry backoff", Namespace: "api"})
	if err != nil || len(hits.Results) == 0 || hits.Results[0].ID != sum.ID {
		t.Fatalf("search after compaction = %+v, %v; want the summary first", hits.Results, err)
	}
	for _, h := range hits.Results {
		if slices.Contains(ids, h.ID) {
			t.Errorf("compacted member %s still in searches", h.ID)
		}
	}
	if back, err := n.Restore(ctx, ids[0]); err != nil || back.Status != model.StatusActive || back.CompactedInto != "" {
		t.Fatalf("restore a compacted member: %+v %v", back, err)
	}
}

func TestCompactApplyRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	members, _ := staleCluster(t, n, "api")
	other := remember(t, n, api.RememberRequest{Namespace: "web", Content: "CSS is built by the asset pipeline"})
	gone := remember(t, n, api.RememberRequest{Namespace: "api", Content: "An archived note"})
	if _, err := n.Forget(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	digest, err := n.store.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ok := []string{members[0].ID, members[1].ID}
	for _, tc := range []struct {
		name string
		req  api.CompactApplyRequest
		want error
	}{
		{"one member", api.CompactApplyRequest{Members: ok[:1], Summary: "s"}, api.ErrInvalid},
		{"the same member twice", api.CompactApplyRequest{Members: []string{ok[0], ok[0]}, Summary: "s"}, api.ErrInvalid},
		{"no summary", api.CompactApplyRequest{Members: ok}, api.ErrInvalid},
		{"unknown id", api.CompactApplyRequest{Members: append(ok, "m-zzzzzzzz"), Summary: "s"}, api.ErrNotFound},
		{"two namespaces", api.CompactApplyRequest{Members: append(ok, other.ID), Summary: "s"}, api.ErrInvalid},
		{"an archived member", api.CompactApplyRequest{Members: append(ok, gone.ID), Summary: "s"}, api.ErrInvalid},
		{"bad tier", api.CompactApplyRequest{Members: ok, Summary: "s", Tier: "god"}, api.ErrInvalid},
	} {
		if _, err := n.CompactApply(ctx, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if after, _ := n.store.Digest(); after != digest {
		t.Fatal("a rejected compaction changed the store")
	}
	if _, err := n.CompactApply(ctx, api.CompactApplyRequest{Members: ok, Summary: "Uploads retry with backoff"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.CompactApply(ctx, api.CompactApplyRequest{Members: []string{ok[0], members[2].ID}, Summary: "again"}); !errors.Is(err, api.ErrInvalid) {
		t.Errorf("compacting a compacted memory again: %v, want ErrInvalid", err)
	}
}
