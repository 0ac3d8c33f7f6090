package node

import (
	"context"
	"testing"
)

func TestGraphSearchPullsInNeighbours(t *testing.T) {
	ctx := context.Background()
	n := testNode(t, "")
	hit := remember(t, n, RememberRequest{Namespace: "pay", Content: "Webhooks are retried with exponential backoff for three days"})
	linked := remember(t, n, RememberRequest{Namespace: "pay", Content: "Verify the signature header of every event before trusting it"})
	elsewhere := remember(t, n, RememberRequest{Namespace: "ops", Content: "The event bus drops messages older than a week"})
	archived := remember(t, n, RememberRequest{Namespace: "pay", Content: "Events used to be polled every minute"})
	for _, to := range []string{linked.ID, elsewhere.ID, archived.ID} {
		if _, err := n.Link(ctx, LinkRequest{From: hit.ID, Rel: "related_to", To: to}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Forget(ctx, archived.ID); err != nil {
		t.Fatal(err)
	}

	res, err := n.Search(ctx, SearchRequest{Query: "webhooks", Namespace: "pay", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || res.Results[0].ID != hit.ID || res.Results[1].ID != linked.ID {
		t.Fatalf("results = %v, want the hit, then its live neighbour in the namespace", ids(res.Results))
	}
	top, pulled := res.Results[0], res.Results[1]
	if top.Fusion == nil || top.Fusion.TextRank != 1 || top.Fusion.GraphRank != 1 || top.Explain == nil || top.Score != top.Fusion.Score {
		t.Errorf("hit: fusion %+v, explain %v, score %v", top.Fusion, top.Explain, top.Score)
	}
	if f := pulled.Fusion; f == nil || f.TextRank != 0 || f.GraphRank != 2 || f.Via != hit.ID || f.Rel != "related_to" || pulled.Explain != nil {
		t.Errorf("neighbour: fusion %+v, explain %v", pulled.Fusion, pulled.Explain)
	}

	plain, err := n.Search(ctx, SearchRequest{Query: "webhooks", Namespace: "pay", NoGraph: true})
	if err != nil || len(plain.Results) != 1 || plain.Results[0].ID != hit.ID || plain.Results[0].Fusion != nil {
		t.Fatalf("without the graph: %v, %v", ids(plain.Results), err)
	}

	if _, err := n.Invalidate(ctx, hit.ID, "related_to", linked.ID); err != nil {
		t.Fatal(err)
	}
	res, err = n.Search(ctx, SearchRequest{Query: "webhooks", Namespace: "pay"})
	if err != nil || len(res.Results) != 1 {
		t.Fatalf("after invalidating the link: %v, %v", ids(res.Results), err)
	}
}

func ids(hits []SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}
