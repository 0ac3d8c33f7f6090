package node

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/embed/model2vec"
	"github.com/memmesh/memmesh/embed/model2vec/m2vtest"
)

// meaningNode is a node with the topic model as its embedder, holding a
// memory of each topic in namespace shop, once their vectors are made.
func meaningNode(t *testing.T) (n *Node, ids map[string]string) {
	t.Helper()
	model, err := model2vec.Load(m2vtest.TopicModel(t, "topics"))
	if err != nil {
		t.Fatal(err)
	}
	n = startNode(t, Config{Home: t.TempDir(), Logger: testLogger(t), Embedder: model})
	ids = map[string]string{}
	for key, text := range map[string]string{
		"pgx":    "Use pgx, not lib/pq",
		"kafka":  "Order events go through Kafka",
		"deploy": "Ship to staging before every release",
	} {
		ids[key] = remember(t, n, api.RememberRequest{Namespace: "shop", Content: text}).ID
	}
	waitEmbedded(t, n, 3)
	return n, ids
}

func waitEmbedded(t *testing.T, n *Node, total int) {
	t.Helper()
	waitUntil(t, "the memories' vectors made", func() bool {
		st, _ := n.EmbedStatus(context.Background())
		return st.Total == total && st.Embedded == total
	})
}

// TestSearchAndBriefByMeaning: with an embedder, search and an aimed
// brief find the memory a query means though it shares no word with it.
func TestSearchAndBriefByMeaning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, ids := meaningNode(t)
	res, err := n.Search(ctx, api.SearchRequest{Namespace: "shop", Query: "message queue"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 || res.Results[0].ID != ids["kafka"] || res.Results[0].Semantic < 0.9 {
		t.Fatalf("search for a message queue: %+v, want the Kafka memory first, found by meaning", res.Results)
	}
	b, err := n.Context(ctx, api.ContextRequest{Namespace: "shop", Query: "which database library should the reports service use"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(b.Matches, func(it api.BriefItem) bool { return it.ID == ids["pgx"] }) {
		t.Fatalf("the brief aimed at a database library holds %+v, want the pgx memory", b.Matches)
	}
	if slices.ContainsFunc(b.Matches, func(it api.BriefItem) bool { return it.ID == ids["deploy"] }) {
		t.Errorf("the brief aimed at a database library holds the deploy memory: %+v", b.Matches)
	}
}

// TestPurgeErasesTheVector: a purged memory's vector is deleted, the
// memory is no longer found by meaning, and the vectors' files hold
// nothing of it.
func TestPurgeErasesTheVector(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, ids := meaningNode(t)
	if _, err := n.Purge(ctx, ids["kafka"]); err != nil {
		t.Fatal(err)
	}
	waitEmbedded(t, n, 2)
	for _, h := range n.meaning.Near(ctx, "message queue", 10) {
		if h.ID == ids["kafka"] {
			t.Fatalf("the purged memory is still near a message queue")
		}
	}
	id := []byte(strings.TrimPrefix(ids["kafka"], IDPrefix))
	waitUntil(t, "the vectors' files rid of the purged memory", func() bool {
		files, err := os.ReadDir(filepath.Join(n.cfg.Home, "vectors"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(n.cfg.Home, "vectors", f.Name()))
			if err == nil && bytes.Contains(data, id) {
				return false
			}
		}
		return true
	})
}

// TestRewordedCopiesLinked: a memory that says what another of its
// namespace says, in other words, is linked similar_to it, from the newer
// to the older; one of another namespace or topic is not, and a link
// someone removed is not made again.
func TestRewordedCopiesLinked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, ids := meaningNode(t)
	reworded := remember(t, n, api.RememberRequest{Namespace: "shop", Content: "Kafka topics carry the order events"}).ID
	elsewhere := remember(t, n, api.RememberRequest{Namespace: "blog", Content: "Events go to a Kafka broker"}).ID
	var edges []api.Edge
	waitUntil(t, "the reworded copy linked", func() bool {
		var err error
		edges, err = n.Edges(ctx, api.EdgesRequest{Endpoints: []string{reworded}})
		return err == nil && len(edges) > 0
	})
	waitEmbedded(t, n, 5)
	edges, err := n.Edges(ctx, api.EdgesRequest{Endpoints: []string{reworded, elsewhere, ids["pgx"], ids["deploy"]}})
	if err != nil {
		t.Fatal(err)
	}
	if len(edges) != 1 || edges[0].From != reworded || edges[0].Rel != "similar_to" || edges[0].To != ids["kafka"] || edges[0].Origin != api.OriginAutoLink {
		t.Fatalf("edges %+v: want one auto-link similar_to from %s to %s", edges, reworded, ids["kafka"])
	}
	if _, err := n.Unlink(ctx, reworded, "similar_to", ids["kafka"]); err != nil {
		t.Fatal(err)
	}
	vecs, err := n.cfg.Embedder.Embed(ctx, []string{"Kafka topics carry the order events"})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.linkSimilarTo(reworded, vecs[0]); err != nil {
		t.Fatal(err)
	}
	if edges, err = n.Edges(ctx, api.EdgesRequest{Endpoints: []string{reworded}}); err != nil || len(edges) != 0 {
		t.Fatalf("after the link was removed, linking again made %+v (%v)", edges, err)
	}
}
