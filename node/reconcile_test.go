package node

import (
	"context"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
)

// hourlyPair starts two mesh nodes whose anti-entropy runs only when a
// test asks (Pull), joined and alive to each other.
func hourlyPair(t *testing.T) (a, b *Node) {
	t.Helper()
	hourly := mesh.Config{SyncInterval: time.Hour}
	a = meshNodeWith(t, "", 1, nil, hourly)
	b = meshNodeWith(t, "", 2, nil, hourly)
	join(t, a, b)
	waitUntil(t, "A and B see each other", func() bool { return alivePeers(a) == 1 && alivePeers(b) == 1 })
	return a, b
}

// setSync sets the replication of namespace ns on n and waits until every
// node of nodes applies it.
func setSync(t *testing.T, n *Node, ns string, sync string, nodes ...*Node) {
	t.Helper()
	if _, err := n.SetNamespace(context.Background(), ns, api.NamespaceChange{Sync: &sync}); err != nil {
		t.Fatal(err)
	}
	for _, o := range nodes {
		waitUntil(t, "the namespace's setting on every node", func() bool { return o.mesh.LocalOnly(ns) == (sync == model.SyncLocal) })
	}
}

// pullBoth runs one anti-entropy round each way.
func pullBoth(t *testing.T, a, b *Node) {
	t.Helper()
	for _, n := range []*Node{a, b} {
		if err := n.Pull(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMeshLocalOnlyKeepsDigestsEqual: each of two nodes keeps memories,
// and an edge to a shared memory, in a local-only namespace. Once synced,
// the digests they compare are equal: what never leaves a machine does
// not make two nodes differ for good.
func TestMeshLocalOnlyKeepsDigestsEqual(t *testing.T) {
	a, b := hourlyPair(t)
	setSync(t, a, "a-private", model.SyncLocal, a, b)
	setSync(t, b, "b-private", model.SyncLocal, a, b)
	for i, n := range []*Node{a, b} {
		ns := []string{"a-private", "b-private"}[i]
		private := remember(t, n, api.RememberRequest{Namespace: ns, Content: "kept on this machine: the backup disk sits in the drawer"})
		remember(t, n, api.RememberRequest{Namespace: ns, Content: "also kept here: the printer needs a reset after updates"})
		shared := remember(t, n, api.RememberRequest{Namespace: "shared", Content: "shared: run the linter before each push"})
		if _, err := n.Link(context.Background(), api.LinkRequest{From: private.ID, Rel: "relates_to", To: shared.ID}); err != nil {
			t.Fatal(err)
		}
		other := []*Node{b, a}[i]
		waitUntil(t, "the shared memory on the other node", func() bool { return has(other, shared.ID) })
		if has(other, private.ID) {
			t.Fatal("a memory of a local-only namespace left its machine")
		}
	}
	pullBoth(t, a, b)
	da, err := a.Digest()
	if err != nil {
		t.Fatal(err)
	}
	db, err := b.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if da != db {
		t.Fatal("two synced nodes differ by the documents of their local-only namespaces")
	}
}
