package node

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/faultnet"
	"github.com/memmesh/memmesh/internal/homescan"
)

// withCanary stores a memory holding canary in its title, content (and so
// its touches), tags, an older revision and the notes of two edges, one
// of them unlinked; and an unrelated memory. It returns both ids.
func withCanary(t *testing.T, n *Node, canary string) (secret, other string) {
	t.Helper()
	ctx := context.Background()
	other = remember(t, n, api.RememberRequest{Namespace: "proj", Content: "Builds run with make; the CI caches modules"}).ID
	secret = remember(t, n, api.RememberRequest{
		Namespace: "proj", Title: "About " + canary, Tags: []string{canary + "-tag"},
		Content: "Old note on " + canary + " in src/" + canary + ".go",
	}).ID
	content := "Newer note: " + canary + " lives in src/" + canary + ".go now"
	if _, err := n.Update(ctx, secret, api.UpdateRequest{Content: &content}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []api.LinkRequest{
		{From: secret, Rel: "related_to", To: other, Notes: "see " + canary},
		{From: other, Rel: "depends_on", To: secret, Notes: "needs " + canary},
		{From: secret, Rel: "touches", To: "url:https://example.com/" + canary},
	} {
		if _, err := n.Link(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Unlink(ctx, other, "depends_on", secret); err != nil {
		t.Fatal(err)
	}
	return secret, other
}

func TestPurgeErasesEverywhereOnThisNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	n := testNode(t, home)
	const canary = "qzcanary81x"
	secret, other := withCanary(t, n, canary)
	if len(homescan.Holding(t, home, canary)) == 0 {
		t.Fatal("no file holds the canary before the purge: the test proves nothing")
	}

	p, err := n.Purge(ctx, secret[:10])
	if err != nil {
		t.Fatalf("Purge: %v", err)
	}
	if p.ID != secret || p.By != n.DeviceID() || p.At.IsZero() || p.Edges != 3 || p.Already {
		t.Fatalf("Purge returned %+v, want id %s by this device with 3 edges", p, secret)
	}
	_, err = n.Get(ctx, secret)
	if !errors.Is(err, api.ErrPurged) || !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), "purged on") ||
		!strings.Contains(err.Error(), n.DeviceID()[:7]) {
		t.Fatalf("Get of a purged memory: %v; want a purged error saying when and by which device", err)
	}
	if _, err := n.Get(ctx, secret[:12]); !errors.Is(err, api.ErrPurged) {
		t.Fatalf("Get by short id of a purged memory: %v, want ErrPurged", err)
	}
	if _, err := n.Update(ctx, secret, api.UpdateRequest{AddTags: []string{"x"}}); !errors.Is(err, api.ErrPurged) {
		t.Fatalf("Update of a purged memory: %v, want ErrPurged", err)
	}
	if _, err := n.Restore(ctx, secret); !errors.Is(err, api.ErrPurged) {
		t.Fatalf("Restore of a purged memory: %v, want ErrPurged", err)
	}
	if _, err := n.Link(ctx, api.LinkRequest{From: other, Rel: "related_to", To: secret}); !errors.Is(err, api.ErrPurged) {
		t.Fatalf("Link to a purged memory: %v, want ErrPurged", err)
	}
	if hits := found(n, canary, ""); len(hits) != 0 {
		t.Fatalf("search finds %v after the purge", hits)
	}
	g, err := n.Traverse(ctx, api.TraverseRequest{Start: other, Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range g.Nodes {
		if node.ID == secret {
			t.Fatal("a traversal still reaches the purged memory")
		}
	}
	var export bytes.Buffer
	if _, err := n.Export(ctx, &export); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(export.Bytes(), []byte(canary)) {
		t.Fatal("the export holds the purged memory's text")
	}
	again, err := n.Purge(ctx, secret)
	if err != nil || !again.Already || !again.At.Equal(p.At) {
		t.Fatalf("purging again = %+v, %v; want the first purge, marked already", again, err)
	}
	if _, err := n.Get(ctx, other); err != nil {
		t.Fatalf("the other memory after the purge: %v", err)
	}

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if files := homescan.Holding(t, home, canary); len(files) > 0 {
		t.Fatalf("after the purge these files still hold the canary: %v", files)
	}
}

func TestDeleteIsUndoneByRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	id := remember(t, n, api.RememberRequest{Content: "Staging runs on the second cluster"}).ID
	if _, err := n.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Update(ctx, id, api.UpdateRequest{AddTags: []string{"x"}}); !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), "restore") {
		t.Fatalf("updating a deleted memory: %v; want an error that says to restore it", err)
	}
	m, err := n.Restore(ctx, id)
	if err != nil {
		t.Fatalf("Restore of a deleted memory: %v", err)
	}
	if m.Status != "active" {
		t.Fatalf("status after restore = %s, want active", m.Status)
	}
	if hits := found(n, "staging cluster", ""); len(hits) != 1 || hits[0] != id {
		t.Fatalf("search after restore finds %v, want %s", hits, id)
	}
}

// TestMeshPurge purges on one of three nodes while another is cut off and
// keeps editing the memory: the purge reaches every node, the cut-off
// node's edits do not bring the memory back, and no home's files hold it.
func TestMeshPurge(t *testing.T) {
	t.Parallel()
	skipIfShort(t)
	ctx := context.Background()
	fn := faultnet.New(1)
	homes := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	i := 0
	nodes := joinAll(t, meshNode(t, homes[0], 1, fn), 3, func(host int) *Node {
		i++
		return meshNode(t, homes[i], host, fn)
	})
	a, b, c := nodes[0], nodes[1], nodes[2]
	const canary = "qzcanary52m"
	secret, other := withCanary(t, a, canary)
	waitUntil(t, "the memories and edges everywhere", func() bool { return converged(nodes) })

	// C is cut off, and edits the memory and links it meanwhile.
	fn.Partition([]string{addr(c)}, []string{addr(a), addr(b)})
	waitUntil(t, "C cut off", func() bool { return alivePeers(c) == 0 })
	edit := "Edited offline: " + canary + " moved"
	if _, err := c.Update(ctx, secret, api.UpdateRequest{Content: &edit}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Link(ctx, api.LinkRequest{From: other, Rel: "builds_on", To: secret, Notes: "offline " + canary}); err != nil {
		t.Fatal(err)
	}

	if _, err := a.Purge(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the purge on B", func() bool {
		_, err := b.Get(ctx, secret)
		return errors.Is(err, api.ErrPurged)
	})
	fn.Heal()
	waitUntil(t, "the purge on C and every node converged", func() bool {
		_, err := c.Get(ctx, secret)
		return errors.Is(err, api.ErrPurged) && converged(nodes)
	})
	for _, n := range nodes {
		if _, err := n.Get(ctx, secret); !errors.Is(err, api.ErrPurged) {
			t.Fatalf("%s: Get after convergence: %v, want purged", n.DeviceID()[:7], err)
		}
		if edges, err := n.edgesOf(other, api.Both); err != nil || len(edges) != 0 {
			t.Fatalf("%s: the other memory still has edges %v (%v)", n.DeviceID()[:7], edges, err)
		}
		waitUntil(t, "the erasure expunged", func() bool { return !n.store.ErasePending() })
	}
	for i, n := range nodes {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		if files := homescan.Holding(t, homes[i], canary); len(files) > 0 {
			t.Fatalf("node%d: these files still hold the canary: %v", i+1, files)
		}
	}
}
