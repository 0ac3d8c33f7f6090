package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
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
	t.Parallel()
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
	digestsEqual(t, a, b)
}

// TestMeshNamespaceSharedAfterLocal: memories written while their
// namespace was local-only reach the peer once it is shared, without
// being edited, at the next anti-entropy round.
func TestMeshNamespaceSharedAfterLocal(t *testing.T) {
	t.Parallel()
	a, b := hourlyPair(t)
	setSync(t, a, "notes", model.SyncLocal, a, b)
	var ids []string
	for i := range 20 {
		ids = append(ids, remember(t, a, api.RememberRequest{Namespace: "notes", Content: fmt.Sprintf("written while local-only, note %d", i)}).ID)
	}
	pullBoth(t, a, b)
	if has(b, ids[0]) {
		t.Fatal("a memory of a local-only namespace left its machine")
	}
	setSync(t, a, "notes", model.SyncAll, a, b)
	pullBoth(t, a, b)
	for _, id := range ids {
		if !has(b, id) {
			t.Fatalf("%s, written while its namespace was local-only, did not reach the peer once shared", id)
		}
	}
	digestsEqual(t, a, b)
}

// TestMeshRepairsAnyDivergence makes each of two synced nodes lose
// documents behind its saved position of the other (erased from its store
// by hand, as a restore or a bug might): the next anti-entropy round, one
// pull each way, brings them back.
func TestMeshRepairsAnyDivergence(t *testing.T) {
	t.Parallel()
	a, b := hourlyPair(t)
	var ids []string
	for i := range 40 {
		ids = append(ids, remember(t, []*Node{a, b}[i%2], api.RememberRequest{Content: fmt.Sprintf("memory %d of the pair", i)}).ID)
	}
	waitUntil(t, "every memory on both nodes", func() bool {
		for _, id := range ids {
			if !has(a, id) || !has(b, id) {
				return false
			}
		}
		return true
	})
	pullBoth(t, a, b) // positions saved past every memory, both ways
	lost := map[*Node][]string{a: ids[0:10], b: ids[10:20]}
	for n, gone := range lost {
		for _, id := range gone {
			if _, err := n.store.Commit(storage.Record{Kind: storage.KindMemory, ID: id[2:], Erase: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	pullBoth(t, a, b)
	for n, gone := range lost {
		for _, id := range gone {
			if !has(n, id) {
				t.Fatalf("%s, lost behind the saved position, was not repaired by the next round", id)
			}
		}
	}
	digestsEqual(t, a, b)
}

// digestsEqual fails the test unless the nodes' digests are equal.
func digestsEqual(t *testing.T, a, b *Node) {
	t.Helper()
	da, err := a.Digest()
	if err != nil {
		t.Fatal(err)
	}
	db, err := b.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if da != db {
		t.Fatal("the nodes' digests differ")
	}
}

// TestMeshCatchUpFromOnePeer: a fresh node joins three members holding
// the same memories. It catches up from one of them; its pulls from the
// others start after that one ends and find nothing left to fetch, so
// every document comes once, not once per member.
func TestMeshCatchUpFromOnePeer(t *testing.T) {
	t.Parallel()
	skipIfShort(t)
	members := cluster(t, 3, nil)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := newRand(seed)
	const count = 1500
	for i := range count {
		remember(t, members[0], api.RememberRequest{Content: fmt.Sprintf("memory %d: %s", i, words(rng, 40))})
	}
	waitUntil(t, "the members hold the same memories", func() bool { return converged(members) })

	fresh := meshNode(t, "", 4, nil)
	join(t, members[0], fresh)
	waitUntil(t, "the fresh node caught up and pulled from every member", func() bool {
		peers, err := fresh.Peers(context.Background())
		if err != nil {
			return false
		}
		synced := 0
		for _, p := range peers {
			if !p.LastSync.IsZero() {
				synced++
			}
		}
		return synced == len(members) && converged(append(members, fresh))
	})
	received, most := 0, 0
	for _, m := range members {
		n := fresh.LastPull(m.DeviceID()).Received
		received, most = received+n, max(most, n)
	}
	t.Logf("documents received by the fresh node's pulls: %d, %d of them by one pull; bytes %d", received, most, fresh.PulledBytes())
	if received > most*3/2 {
		t.Fatalf("the fresh node received %d documents, its catch-up pull %d: the same documents came from several members", received, most)
	}
}

// TestMeshBehindWhenANamespaceIsShared: memories of a namespace that was
// local-only while the peer pulled, then shared, change no entry of the
// change log, yet the peer lacks them: behind counts them (one per digest
// bucket at least) until the peer holds them.
func TestMeshBehindWhenANamespaceIsShared(t *testing.T) {
	t.Parallel()
	a, b := hourlyPair(t)
	setSync(t, a, "notes", model.SyncLocal, a, b)
	var ids []string
	buckets := make(map[byte]bool)
	for i := range 20 {
		id := remember(t, a, api.RememberRequest{Namespace: "notes", Content: fmt.Sprintf("written while local-only, note %d", i)}).ID
		ids = append(ids, id)
		buckets[storage.Bucket(storage.KindMemory, id[2:])] = true
	}
	pullBoth(t, a, b)
	waitUntil(t, "a says b lacks nothing", func() bool { return behindOf(t, a, b.DeviceID()) == 0 })
	setSync(t, a, "notes", model.SyncAll, a, b)
	// b lacks the memories and the edges between them (near duplicates).
	lacks := len(ids)
	if err := a.store.All(storage.KindEdge, func(storage.Record) error { lacks++; return nil }); err != nil {
		t.Fatal(err)
	}
	// The namespace's record, pushed to b, may share a bucket with one of
	// the memories: that bucket's difference is explained by it. Until a
	// hears that b took the push (b applies it before it answers), a
	// counts the record too.
	n := behindOf(t, a, b.DeviceID())
	t.Logf("a says b lacks %d documents; it lacks %d, the %d memories in %d buckets", n, lacks, len(ids), len(buckets))
	if n < len(buckets)-1 || n > lacks+1 {
		t.Fatalf("a says b lacks %d documents; b lacks %d, the %d memories in %d buckets", n, lacks, len(ids), len(buckets))
	}
	pullBoth(t, a, b)
	waitUntil(t, "a says b lacks nothing", func() bool { return behindOf(t, a, b.DeviceID()) == 0 })
}
