package node

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
)

func TestGraphSearchPullsInNeighbours(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	hit := remember(t, n, api.RememberRequest{Namespace: "pay", Content: "Webhooks are retried with exponential backoff for three days"})
	linked := remember(t, n, api.RememberRequest{Namespace: "pay", Content: "Verify the signature header of every event before trusting it"})
	elsewhere := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "The event bus drops messages older than a week"})
	archived := remember(t, n, api.RememberRequest{Namespace: "pay", Content: "Events used to be polled every minute"})
	for _, to := range []string{linked.ID, elsewhere.ID, archived.ID} {
		if _, err := n.Link(ctx, api.LinkRequest{From: hit.ID, Rel: "related_to", To: to}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Forget(ctx, archived.ID); err != nil {
		t.Fatal(err)
	}

	res, err := n.Search(ctx, api.SearchRequest{Query: "webhooks", Namespace: "pay", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || res.Results[0].ID != hit.ID || res.Results[1].ID != linked.ID {
		t.Fatalf("results = %v, want the hit, then its live neighbour in the namespace", ids(res.Results))
	}
	top, pulled := res.Results[0], res.Results[1]
	if f := top.Fusion; f == nil || top.Explain == nil || f.Text != top.Explain.Final || f.Linked != 0 || top.Score != f.Score {
		t.Errorf("hit: fusion %+v, explain %v, score %v", top.Fusion, top.Explain, top.Score)
	}
	if f := pulled.Fusion; f == nil || f.Text != 0 || f.Linked != linkShare*top.Score || f.Via != hit.ID || f.Rel != "related_to" || pulled.Explain != nil {
		t.Errorf("neighbour: fusion %+v, explain %v", pulled.Fusion, pulled.Explain)
	}

	plain, err := n.Search(ctx, api.SearchRequest{Query: "webhooks", Namespace: "pay", NoGraph: true})
	if err != nil || len(plain.Results) != 1 || plain.Results[0].ID != hit.ID || plain.Results[0].Fusion != nil {
		t.Fatalf("without the graph: %v, %v", ids(plain.Results), err)
	}

	if _, err := n.Invalidate(ctx, hit.ID, "related_to", linked.ID); err != nil {
		t.Fatal(err)
	}
	res, err = n.Search(ctx, api.SearchRequest{Query: "webhooks", Namespace: "pay"})
	if err != nil || len(res.Results) != 1 {
		t.Fatalf("after invalidating the link: %v, %v", ids(res.Results), err)
	}
}

func ids(hits []api.SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func TestGraphSearchFollowsTheSessionThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	at := time.Now().Add(-time.Hour)
	var thread []api.RememberResult
	for i, text := range []string{
		"Looked at why the nightly export is slow",
		"The export job reads every invoice row one by one",
		"Added a partial index on invoices(created_at)",
		"It now finishes in four minutes",
		"Unrelated: renamed the staging bucket",
	} {
		thread = append(thread, remember(t, n, api.RememberRequest{Namespace: "billing", Content: text, Session: "s-1", At: at.Add(time.Duration(i) * time.Minute)}))
	}
	other := remember(t, n, api.RememberRequest{Namespace: "billing", Content: "Runs in four minutes on the old cluster", Session: "s-2", At: at})

	res, err := n.Search(ctx, api.SearchRequest{Query: "partial index", Namespace: "billing", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	got := ids(res.Results)
	if len(got) != 5 || got[0] != thread[2].ID {
		t.Fatalf("results = %v, want the match then its thread two steps either side", got)
	}
	near := map[string]bool{thread[1].ID: true, thread[3].ID: true}
	if !near[got[1]] || !near[got[2]] || got[3] != thread[0].ID && got[3] != thread[4].ID {
		t.Errorf("results = %v: nearer neighbours should come first", got)
	}
	if f := res.Results[1].Fusion; f == nil || f.Rel != RelThread || f.Via != thread[2].ID || f.Text != 0 {
		t.Errorf("neighbour fusion = %+v", f)
	}
	if slices.Contains(got, other.ID) {
		t.Errorf("another session's memory was pulled in: %v", got)
	}

	// A neighbour that matches too gains from both; the other session's
	// match has only its own text and its own session.
	res, err = n.Search(ctx, api.SearchRequest{Query: "four minutes index", Namespace: "billing", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res.Results); got[0] != thread[3].ID && got[0] != thread[2].ID {
		t.Errorf("results = %v, want the thread's matches first", got)
	}
	for _, h := range res.Results {
		if h.ID == other.ID && (h.Fusion.Linked != 0 || math.Abs(h.Fusion.Session-sessionShare*h.Fusion.Text/sessionBest) > 1e-12) {
			t.Errorf("other session's memory borrowed: %+v", h.Fusion)
		}
	}
}

func TestGraphSearchQuestionLendsMoreToWhatFollows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	at := time.Now().Add(-time.Hour)
	var thread []api.RememberResult
	for i, text := range []string{
		"Looked at the staging bucket",
		"Which connection pool size should the billing service use?",
		"Fifty, since the reports run in parallel",
	} {
		thread = append(thread, remember(t, n, api.RememberRequest{Namespace: "billing", Content: text, Session: "s-1", At: at.Add(time.Duration(i) * time.Minute)}))
	}
	res, err := n.Search(ctx, api.SearchRequest{Query: "connection pool size", Namespace: "billing", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]float64{}
	for _, h := range res.Results {
		if h.Fusion != nil {
			linked[h.ID] = h.Fusion.Linked
		}
	}
	before, after := linked[thread[0].ID], linked[thread[2].ID]
	if got := ids(res.Results); len(got) != 3 || got[0] != thread[1].ID || got[1] != thread[2].ID {
		t.Errorf("results = %v, want the question %s, then what follows it %s", got, thread[1].ID, thread[2].ID)
	}
	if before <= 0 || math.Abs(after-answerWeight*before) > 1e-12 {
		t.Errorf("the question lent %v to what follows it and %v to what precedes it, want %v times as much", after, before, answerWeight)
	}
}
