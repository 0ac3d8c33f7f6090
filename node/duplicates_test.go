package node

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/memmesh/memmesh/api"
)

// copiesOf returns a node holding two memories of one text, made apart on
// two other nodes (as two machines do before they sync), and their ids,
// the first created first.
func copiesOf(t *testing.T, text string) (n *Node, first, later string) {
	t.Helper()
	ctx := context.Background()
	n = testNode(t, "")
	for _, id := range []*string{&first, &later} {
		apart := testNode(t, "")
		*id = remember(t, apart, api.RememberRequest{Namespace: "team", Content: text}).ID
		if _, err := n.Import(ctx, bytes.NewReader(exportOf(t, apart))); err != nil {
			t.Fatal(err)
		}
	}
	return n, first, later
}

// waitForEdges polls the live edges at id until want says they are right.
func waitForEdges(t *testing.T, n *Node, id string, what string, want func([]api.Edge) bool) []api.Edge {
	t.Helper()
	var edges []api.Edge
	waitUntil(t, what+" at "+id, func() bool {
		var err error
		if edges, err = n.Edges(context.Background(), api.EdgesRequest{Endpoints: []string{id}}); err != nil {
			t.Fatal(err)
		}
		return want(edges)
	})
	return edges
}

func TestCopiesOfOneTextAreLinkedOnceAndAnUnlinkStays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const text = "Run make migrate before starting the API"
	n, first, later := copiesOf(t, text)
	edges := waitForEdges(t, n, first, "a link between the copies", func(e []api.Edge) bool { return len(e) > 0 })
	if len(edges) != 1 || edges[0].From != later || edges[0].Rel != "related_to" || edges[0].To != first ||
		edges[0].Origin != api.OriginAutoLink || edges[0].Notes != dupNotes {
		t.Fatalf("edges = %+v, want one auto-link related_to from the later copy %s to the first %s", edges, later, first)
	}

	if _, err := n.Unlink(ctx, later, "related_to", first); err != nil {
		t.Fatal(err)
	}
	// Whenever the copies are checked again (a change of either is
	// indexed anew), the removed link stays removed.
	if err := n.linkCopies(contentHash("team", text)); err != nil {
		t.Fatal(err)
	}
	if edges, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{first}}); err != nil || len(edges) != 0 {
		t.Fatalf("after an unlink and another check: edges %+v, %v; want none", edges, err)
	}
}

// TestCopiesOfSeveralTextsAreLinkedInOnePass imports two machines' copies
// of two texts (and a text of its own on each) at once, so that the
// linker finds the copies of several texts in one pass over the index.
func TestCopiesOfSeveralTextsAreLinkedInOnePass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	texts := []string{"Run make migrate before starting the API", "The staging database is reset every night"}
	n := testNode(t, "")
	ids := make([][]string, len(texts)) // per text, the copy of each machine
	for machine := range 2 {
		apart := testNode(t, "")
		for i, text := range texts {
			ids[i] = append(ids[i], remember(t, apart, api.RememberRequest{Namespace: "team", Content: text}).ID)
		}
		remember(t, apart, api.RememberRequest{Namespace: "team", Content: fmt.Sprintf("Only machine %d knows this", machine)})
		if _, err := n.Import(ctx, bytes.NewReader(exportOf(t, apart))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range texts {
		first, later := ids[i][0], ids[i][1]
		edges := waitForEdges(t, n, later, "no link between the copies of "+texts[i], func(e []api.Edge) bool { return len(e) > 0 })
		if len(edges) != 1 || edges[0].From != later || edges[0].To != first || edges[0].Notes != dupNotes {
			t.Errorf("edges of %q = %+v, want one auto-link from %s to %s", texts[i], edges, later, first)
		}
	}
}
