package node

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/internal/faultnet"
	"github.com/memmesh/memmesh/internal/mutate"
	"github.com/memmesh/memmesh/internal/nodetest"
	"github.com/memmesh/memmesh/internal/testwait"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

var vocabulary = strings.Fields("cache retry deploy schema index query latency build lint test queue worker config token parser handler router migration shard replica timeout budget")

func words(rng *rand.Rand, k int) string {
	out := make([]string, k)
	for i := range out {
		out[i] = vocabulary[rng.IntN(len(vocabulary))]
	}
	return strings.Join(out, " ")
}

// meshNode starts a node with the mesh on 127.0.0.<host>, an ephemeral
// port, fast failure detection and, when fn is set, faults.
func meshNode(tb testing.TB, home string, host int, fn *faultnet.Net) *Node {
	return meshNodeWith(tb, home, host, fn, mesh.Config{
		ProbeInterval: 200 * time.Millisecond,
		RetryInterval: 500 * time.Millisecond,
		SyncInterval:  2 * time.Second,
	})
}

// meshNodeWith is meshNode with the timings of mc (zero: the defaults).
func meshNodeWith(tb testing.TB, home string, host int, fn *faultnet.Net, mc mesh.Config) *Node {
	tb.Helper()
	if home == "" {
		home = tb.TempDir()
	}
	mc.Listen = fmt.Sprintf("127.0.0.%d:0", host)
	mc.Name = fmt.Sprintf("node%d", host)
	if fn != nil {
		mc.WrapConn = fn.Wrap
	}
	skew := new(skewedClock)
	n, err := New(Config{Home: home, Logger: testLogger(tb), Mesh: &mc, Clock: clock.WithNow(skew.now), IndexFlushDelay: -1})
	if err != nil {
		tb.Fatal(err)
	}
	clocks.Store(n, skew)
	if err := n.Start(context.Background()); err != nil {
		n.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { n.Close() })
	return n
}

// skewedClock is the wall clock moved by an offset that a test sets.
type skewedClock struct{ skew atomic.Int64 }

func (c *skewedClock) now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

// clocks holds each mesh test node's clock.
var clocks sync.Map // *Node -> *skewedClock

func advance(n *Node, d time.Duration) {
	c, _ := clocks.Load(n)
	c.(*skewedClock).skew.Add(int64(d))
}

// addr is a node's mesh address.
func addr(n *Node) string { return n.mesh.Addr().String() }

// cluster starts k nodes and joins them all through invites on the first.
func cluster(t testing.TB, k int, fn *faultnet.Net) []*Node {
	t.Helper()
	return joinAll(t, meshNode(t, "", 1, fn), k, func(host int) *Node { return meshNode(t, "", host, fn) })
}

// joinAll joins k-1 new nodes to first and waits until all see each other.
func joinAll(t testing.TB, first *Node, k int, start func(host int) *Node) []*Node {
	t.Helper()
	nodes := []*Node{first}
	for i := 2; i <= k; i++ {
		n := start(i)
		join(t, first, n)
		nodes = append(nodes, n)
	}
	waitUntil(t, "every node sees every other alive", func() bool {
		for _, n := range nodes {
			if alivePeers(n) != k-1 {
				return false
			}
		}
		return true
	})
	return nodes
}

func join(t testing.TB, member, newcomer *Node) {
	t.Helper()
	ctx := context.Background()
	inv, err := member.Invite(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newcomer.Join(ctx, inv.Token); err != nil {
		t.Fatal(err)
	}
}

func alivePeers(n *Node) int {
	peers, err := n.Peers(context.Background())
	if err != nil {
		return -1
	}
	k := 0
	for _, p := range peers {
		if p.State == "alive" {
			k++
		}
	}
	return k
}

var waitUntil = testwait.Until

func found(n *Node, query, ns string) []string {
	res, err := n.Search(context.Background(), api.SearchRequest{Query: query, Namespace: ns})
	if err != nil {
		return nil
	}
	var ids []string
	for _, h := range res.Results {
		ids = append(ids, h.ID)
	}
	return ids
}

func TestMeshCaptureSearchableEverywhere(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 3, nil)
	res := remember(t, nodes[0], api.RememberRequest{Namespace: "proj", Content: "Deploys go through the blue-green pipeline in deploy/pipeline.yaml"})
	for i, n := range nodes[1:] {
		waitUntil(t, fmt.Sprintf("capture on node1 searchable on node%d", i+2), func() bool {
			return slices.Contains(found(n, "blue-green pipeline", "proj"), res.ID)
		})
	}
}

func TestMeshRefusesStrangers(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 2, nil)
	stranger := meshNode(t, "", 9, nil)
	if _, err := stranger.JoinAddr(context.Background(), addr(nodes[0])); err == nil {
		t.Fatal("a device outside the registry joined by address")
	}
}

// converged reports whether every node holds the same documents with the
// same heads (equal anti-entropy digests), all of them durable.
func converged(nodes []*Node) bool {
	first, err := nodes[0].store.Digest()
	if err != nil {
		return false
	}
	for _, n := range nodes[1:] {
		if d, err := n.store.Digest(); err != nil || d != first {
			return false
		}
	}
	return !slices.ContainsFunc(nodes, func(n *Node) bool { return !settled(n) })
}

func has(n *Node, id string) bool {
	_, err := n.Get(context.Background(), id)
	return err == nil
}

// errUnsettled stops a scan at a record that is not durable yet.
var errUnsettled = errors.New("a record is not durable yet")

// settled reports whether every record n holds is durable. What follows
// the change log (the brief's index, the search index, Changes) reads only
// durable changes, while a replicated record can be read, and counts in
// the digest, a moment before the fsync that makes it durable is done.
func settled(n *Node) bool {
	durable := n.store.DurableSeq()
	for _, kind := range []storage.Kind{storage.KindMemory, storage.KindEdge, storage.KindMesh, storage.KindPurge} {
		if err := n.store.All(kind, func(rec storage.Record) error {
			if rec.Seq > durable {
				return errUnsettled
			}
			return nil
		}); err != nil {
			return false
		}
	}
	return true
}

func TestMeshConcurrentEditsConverge(t *testing.T) {
	t.Parallel()
	fn := faultnet.New(1)
	nodes := cluster(t, 3, fn)
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	res := remember(t, a, api.RememberRequest{Namespace: "proj", Content: "The cache TTL is 5 minutes", Tags: []string{"cache"}})
	waitUntil(t, "memory on every node", func() bool { return has(b, res.ID) && has(nodes[2], res.ID) })

	// Cut A off; both sides edit the same memory.
	fn.Partition([]string{addr(a)}, []string{addr(b), addr(nodes[2])})
	textA, textB := "The cache TTL is 10 minutes (raised for the batch jobs)", "The cache TTL is 2 minutes (lowered after stale reads)"
	if _, err := a.Update(ctx, res.ID, api.UpdateRequest{Content: &textA, AddTags: []string{"batch"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Update(ctx, res.ID, api.UpdateRequest{Content: &textB, AddTags: []string{"reads"}}); err != nil {
		t.Fatal(err)
	}
	fn.Heal()
	waitUntil(t, "identical heads on all nodes", func() bool { return converged(nodes) })
	for i, n := range nodes {
		m, err := n.Get(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, r := range m.Conflict {
			texts = append(texts, r.Text)
		}
		if !slices.Contains(texts, textA) || !slices.Contains(texts, textB) {
			t.Errorf("node%d: sync conflict not surfaced with both texts: %q", i+1, texts)
		}
		for _, tag := range []string{"cache", "batch", "reads"} {
			if !slices.Contains(m.Tags, tag) {
				t.Errorf("node%d: tag %q lost in the merge: %v", i+1, tag, m.Tags)
			}
		}
		// Equal digests show the merge applied; it is durable and indexed
		// a moment later.
		waitUntil(t, fmt.Sprintf("node%d: merged memory searchable", i+1), func() bool {
			return slices.Contains(found(n, "stale reads", "proj"), res.ID)
		})
	}
}

func TestMeshDeletionAndStatusPropagate(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 2, nil)
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	keep := remember(t, a, api.RememberRequest{Content: "Archive old sprint notes every quarter"})
	gone := remember(t, a, api.RememberRequest{Content: "Temporary workaround: pin protobuf to 1.3"})
	waitUntil(t, "memories on B", func() bool { return has(b, keep.ID) && has(b, gone.ID) })
	if _, err := a.Delete(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Forget(ctx, keep.ID); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "deletion on B and archive on A", func() bool {
		mg, err1 := b.load(gone.ID[2:])
		mk, err2 := a.load(keep.ID[2:])
		return err1 == nil && err2 == nil && mg.Status == "deleted" && mk.Status == "archived"
	})
	waitUntil(t, "the memory deleted on A no longer found on B", func() bool {
		return !slices.Contains(found(b, "protobuf workaround", ""), gone.ID)
	})
}

// TestMeshPartitionFinalRead is a Jepsen-style check: while the mesh is
// split, both sides keep writing (with packet loss); after the partition
// heals, every acknowledged write is on every node.
func TestMeshPartitionFinalRead(t *testing.T) {
	t.Parallel()
	skipIfShort(t)
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			fn := faultnet.New(seed)
			nodes := cluster(t, 3, fn)
			rng := newRand(seed)
			var acked []string
			write := func(phase string, k int) {
				for i := range k {
					n := nodes[rng.IntN(len(nodes))]
					res, err := n.Remember(context.Background(), api.RememberRequest{
						Namespace: "jepsen",
						Content:   fmt.Sprintf("seed %d %s write %d: %s", seed, phase, i, words(rng, 8)),
					})
					if err != nil {
						t.Fatal(err)
					}
					acked = append(acked, res.ID)
				}
			}
			write("before", 10)
			lone := rng.IntN(3)
			var rest []string
			for i, n := range nodes {
				if i != lone {
					rest = append(rest, addr(n))
				}
			}
			fn.Partition([]string{addr(nodes[lone])}, rest)
			fn.SetDrop(0.05)
			write("during", 15)
			// Long enough for membership to declare the other side dead, so
			// that healing needs the reconnection loop.
			waitUntil(t, "the partition detected", func() bool { return alivePeers(nodes[lone]) == 0 })
			write("during", 15)
			fn.SetDrop(0)
			fn.Heal()
			write("after", 10)
			waitUntil(t, "convergence after the partition healed", func() bool { return converged(nodes) })
			for i, n := range nodes {
				for _, id := range acked {
					if !has(n, id) {
						t.Errorf("node%d lacks acknowledged write %s", i+1, id)
					}
				}
			}
		})
	}
}

func TestMeshSecurity(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 3, nil)
	a, b, c := nodes[0], nodes[1], nodes[2]
	ctx := context.Background()

	// A device outside the registry is refused at the handshake.
	stranger := meshNode(t, "", 9, nil)
	if _, err := stranger.JoinAddr(ctx, addr(a)); err == nil {
		t.Fatal("a stranger joined by address")
	}
	if _, err := stranger.mesh.Open(ctx, addr(a), transport.StreamSync); err == nil {
		t.Fatal("a stranger opened a sync stream")
	}

	// A token works once, and not after it expires.
	inv, err := a.Invite(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stranger.Join(ctx, inv.Token); err != nil {
		t.Fatal(err)
	}
	late := meshNode(t, "", 10, nil)
	if _, err := late.Join(ctx, inv.Token); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("reused token: %v, want a refusal saying it was used", err)
	}
	short, err := a.Invite(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	advance(a, 2*time.Minute) // the inviter's clock: the joiner's still accepts the token
	if _, err := late.Join(ctx, short.Token); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired token: %v, want a refusal saying it expired", err)
	}
	if _, err := late.Join(ctx, "mmj1garbage"); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("garbled token: %v, want ErrInvalid", err)
	}

	// A revoked device is refused by every member once the registry
	// reaches them, and gets nothing more.
	if _, err := a.Revoke(ctx, b.DeviceID()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "revocation on C", func() bool { return c.mesh.Authorize(b.DeviceID()) != nil })
	for _, m := range []*Node{a, c} {
		if _, err := b.mesh.Open(ctx, addr(m), transport.StreamSync); err == nil {
			t.Fatalf("revoked device opened a stream to %s", m.DeviceID())
		}
	}
	secret := remember(t, a, api.RememberRequest{Content: "written after B was revoked"})
	waitUntil(t, "the new memory on C", func() bool { return has(c, secret.ID) })
	if err := b.Pull(ctx); err == nil && has(b, secret.ID) {
		t.Fatal("the revoked device received a memory written after its revocation")
	}
	if has(b, secret.ID) {
		t.Fatal("the revoked device received a memory written after its revocation")
	}
	if _, err := a.Revoke(ctx, a.DeviceID()); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("revoking oneself: %v", err)
	}

	// A join the inviter refuses leaves the invite for the device it was
	// meant for.
	fresh, err := a.Invite(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Join(ctx, fresh.Token); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("a revoked device's join: %v, want a refusal saying it was revoked", err)
	}
	if _, err := late.Join(ctx, fresh.Token); err != nil {
		t.Fatalf("the invite after a refused join: %v", err)
	}
}

func TestMeshLocalOnlyNamespace(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 2, nil)
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	local := model.SyncLocal
	if _, err := a.SetNamespace(ctx, "private", api.NamespaceChange{Sync: &local}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "policy on B", func() bool { return b.mesh.LocalOnly("private") })
	private := remember(t, a, api.RememberRequest{Namespace: "private", Content: "home router password hint lives in the safe"})
	shared := remember(t, a, api.RememberRequest{Namespace: "shared", Content: "Use make lint before pushing"})
	waitUntil(t, "shared memory on B", func() bool { return has(b, shared.ID) })
	waitUntil(t, "a complete pull from A", func() bool { return b.Pull(ctx) == nil })
	if has(b, private.ID) {
		t.Fatal("a memory of a local-only namespace left its machine")
	}
	// The receiving side refuses one too, whatever a peer sends.
	bPrivate := remember(t, b, api.RememberRequest{Namespace: "private", Content: "B's own local note"})
	doc, err := b.store.GetDoc(storage.KindMemory, bPrivate.ID[2:])
	if err != nil {
		t.Fatal(err)
	}
	err = a.mesh.Apply(b.DeviceID(), []transport.Entry{{Kind: byte(storage.KindMemory), ID: bPrivate.ID[2:], Doc: doc}})
	if !errors.Is(err, api.ErrInvalid) || has(a, bPrivate.ID) {
		t.Fatalf("a pushed memory of a local-only namespace: %v, stored %v", err, has(a, bPrivate.ID))
	}
}

// TestApplyRejectsBadDocuments sends what a broken or hostile peer might:
// nothing of it is stored, and the node keeps working.
func TestApplyRejectsBadDocuments(t *testing.T) {
	t.Parallel()
	a := meshNode(t, "", 1, nil)
	b := testNode(t, "")
	good := remember(t, b, api.RememberRequest{Content: "a good memory"})
	id := good.ID[2:]
	doc, err := b.store.GetDoc(storage.KindMemory, id)
	if err != nil {
		t.Fatal(err)
	}
	// A change whose dependencies are missing: an incremental save of a
	// second change, without the first.
	am, err := automerge.Load(doc)
	if err != nil {
		t.Fatal(err)
	}
	am.SaveIncremental() // everything so far
	if err := am.RootMap().Set("title", "renamed"); err != nil {
		t.Fatal(err)
	}
	if _, err := am.Commit("rename"); err != nil {
		t.Fatal(err)
	}
	incremental := am.SaveIncremental()

	garbled := slices.Clone(doc)
	garbled[len(garbled)/2] ^= 0xff
	for name, e := range map[string]transport.Entry{
		"garbled":            {Kind: 'm', ID: id, Doc: garbled},
		"truncated":          {Kind: 'm', ID: id, Doc: doc[:len(doc)/2]},
		"not automerge":      {Kind: 'm', ID: id, Doc: []byte("hello")},
		"missing deps":       {Kind: 'm', ID: id, Doc: incremental},
		"wrong id":           {Kind: 'm', ID: crdt.NewID(), Doc: doc},
		"wrong kind":         {Kind: 'e', ID: id, Doc: doc},
		"unknown kind":       {Kind: 'z', ID: id, Doc: doc},
		"no document":        {Kind: 'm', ID: id},
		"invalid id":         {Kind: 'm', ID: "../../etc", Doc: doc},
		"mesh as memory":     {Kind: 'x', ID: id, Doc: doc},
		"oversized document": {Kind: 'm', ID: id, Doc: make([]byte, crdt.MaxDocSize+1)},
	} {
		if err := a.mesh.Apply(b.DeviceID(), []transport.Entry{e}); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
		if has(a, good.ID) {
			t.Fatalf("%s: stored", name)
		}
	}
	// After all that, the good document applies.
	if err := a.mesh.Apply(b.DeviceID(), []transport.Entry{{Kind: 'm', ID: id, Doc: doc}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(found(a, "good memory", ""), good.ID) {
		t.Fatal("the good document is not searchable")
	}
}

// FuzzApplyDocs feeds arbitrary document frames from a peer through the
// receiving path (decode, validation, Automerge, merge, commit). Nothing
// may crash the process, and whatever is accepted must be readable.
func FuzzApplyDocs(f *testing.F) {
	src := testNode(f, "")
	res, err := src.Remember(context.Background(), api.RememberRequest{Content: "seed memory for the fuzzer", Tags: []string{"fuzz"}})
	if err != nil {
		f.Fatal(err)
	}
	doc, err := src.store.GetDoc(storage.KindMemory, res.ID[2:])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(transport.AppendEntries(nil, []transport.Entry{{Kind: 'm', ID: res.ID[2:], Doc: doc}}))
	f.Add(transport.AppendEntries(nil, []transport.Entry{{Kind: 'x', ID: res.ID[2:], Doc: doc}}))
	f.Add([]byte{1, 'm', 26})
	mutate.Seeds(f, 200, transport.AppendEntries(nil, []transport.Entry{{Kind: 'm', ID: res.ID[2:], Doc: doc}}))
	tomb, err := crdt.NewTombstone(res.ID[2:], time.Now(), src.DeviceID()).Encode()
	if err != nil {
		f.Fatal(err)
	}
	tombs := transport.AppendEntries(nil, []transport.Entry{{Kind: 'p', ID: res.ID[2:], Doc: tomb}, {Kind: 'm', ID: res.ID[2:], Doc: doc}})
	f.Add(tombs)
	mutate.Seeds(f, 100, tombs)
	dst := meshNode(f, "", 1, nil)
	f.Fuzz(func(t *testing.T, payload []byte) {
		docs, err := transport.DecodeEntries(payload)
		if err != nil {
			return
		}
		if err := dst.mesh.Apply("FUZZ", docs); err != nil && !errors.Is(err, api.ErrInvalid) {
			t.Fatalf("apply: %v", err)
		}
		for _, d := range docs {
			if d.Kind == 'm' && crdt.ValidID(d.ID) {
				if _, err := dst.load(d.ID); err != nil && !storageNotFound(err) {
					t.Fatalf("stored memory %s unreadable: %v", d.ID, err)
				}
				if _, err := dst.load(d.ID); err == nil && dst.purged(d.ID) {
					t.Fatalf("memory %s is stored beside its tombstone", d.ID)
				}
			}
		}
	})
}

// TestMeshBadFrames: a member that sends truncated, oversized, garbled or
// unexpected frames gets its stream closed; the node keeps serving.
func TestMeshBadFrames(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 2, nil)
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	res := remember(t, a, api.RememberRequest{Content: "still served after the garbage"})
	for name, send := range map[string]func(s *transport.Stream) error{
		"oversized length": func(s *transport.Stream) error {
			_, err := s.Write([]byte{0xff, 0xff, 0xff, 0xf0, transport.FramePull})
			return err
		},
		"truncated frame": func(s *transport.Stream) error {
			_, err := s.Write([]byte{0, 0, 0, 100, transport.FramePull, 1, 2, 3})
			return err
		},
		"garbled pull": func(s *transport.Stream) error {
			return s.WriteFrame(transport.FramePull, []byte("not a pull request"))
		},
		"unexpected frame": func(s *transport.Stream) error {
			return s.WriteFrame(transport.FrameJoined, nil)
		},
		"unknown frame": func(s *transport.Stream) error {
			return s.WriteFrame(200, []byte{1, 2, 3})
		},
	} {
		for _, typ := range []transport.StreamType{transport.StreamSync, transport.StreamPush} {
			s, err := b.mesh.Open(ctx, addr(a), typ)
			if err != nil {
				t.Fatalf("%s: open %v: %v", name, typ, err)
			}
			if err := send(s); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			s.CloseWrite()
			s.SetReadDeadline(time.Now().Add(testwait.Limit))
			for { // a is expected to answer with an error frame or close
				if _, _, err := s.ReadFrame(transport.MaxFrame); err != nil {
					break
				}
			}
			s.Close()
		}
	}
	// a still works: a fresh node pulls everything from it.
	c := meshNode(t, "", 3, nil)
	join(t, a, c)
	waitUntil(t, "a fresh node catches up after the garbage", func() bool { return has(c, res.ID) })
}

// TestMeshCycleAfterMerge: during a partition, A links x supersedes y and
// B links y supersedes x; each is fine alone. After the heal both nodes
// hold both edges, and Doctor reports the cycle on each.
func TestMeshCycleAfterMerge(t *testing.T) {
	t.Parallel()
	fn := faultnet.New(5)
	nodes := cluster(t, 2, fn)
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	x := remember(t, a, api.RememberRequest{Content: "Deploy with Helm charts"})
	y := remember(t, a, api.RememberRequest{Content: "Deploy with raw manifests"})
	waitUntil(t, "memories on B", func() bool { return has(b, x.ID) && has(b, y.ID) })

	fn.Partition([]string{addr(a)}, []string{addr(b)})
	if _, err := a.Link(ctx, api.LinkRequest{From: x.ID, Rel: "supersedes", To: y.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Link(ctx, api.LinkRequest{From: y.ID, Rel: "supersedes", To: x.ID}); err != nil {
		t.Fatal(err)
	}
	fn.Heal()
	waitUntil(t, "convergence", func() bool { return converged(nodes) })
	for i, n := range nodes {
		rep, err := n.Doctor(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []api.Cycle{{Rel: "supersedes", Members: slices.Sorted(slices.Values([]string{x.ID, y.ID}))}}
		if !reflect.DeepEqual(rep.Cycles, want) {
			t.Errorf("node%d: doctor cycles = %+v, want %+v", i+1, rep.Cycles, want)
		}
		brief, err := n.Context(ctx, api.ContextRequest{})
		if err != nil || !reflect.DeepEqual(brief.Cycles, want) {
			t.Errorf("node%d: brief cycles = %+v (%v), want %+v", i+1, brief.Cycles, err, want)
		}
	}
	// Invalidating one edge on either machine resolves it everywhere.
	if _, err := b.Invalidate(ctx, y.ID, "supersedes", x.ID); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the cycle resolved on A", func() bool {
		rep, err := a.Doctor(ctx)
		return err == nil && len(rep.Cycles) == 0
	})
}

// TestMeshSupersedesStaleOnPeer: a supersedes edge made on A makes its
// target stale on B once the edge arrives.
func TestMeshSupersedesStaleOnPeer(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 2, nil)
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	old := remember(t, a, api.RememberRequest{Content: "Build with webpack"})
	newer := remember(t, a, api.RememberRequest{Content: "Build with vite"})
	if _, err := a.Link(ctx, api.LinkRequest{From: newer.ID, Rel: "supersedes", To: old.ID}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the superseded memory stale on B", func() bool {
		stale, err := b.Stale(ctx, api.StaleRequest{})
		return err == nil && len(stale) == 1 && stale[0].Memory.ID == old.ID
	})
}

// TestMeshCompactionOnPeer: a compaction on A reaches B whole: the
// summary, the members compacted into it and the re-pointed edge.
func TestMeshCompactionOnPeer(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 2, nil)
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	members, user := staleCluster(t, a, "api")
	ids := []string{members[0].ID, members[1].ID, members[2].ID}
	res, err := a.CompactApply(ctx, api.CompactApplyRequest{Members: ids, Summary: "Uploads retry with capped exponential backoff, on 5xx only"})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the compaction on B", func() bool {
		for _, id := range ids {
			m, err := b.Get(ctx, id)
			if err != nil || m.Status != model.StatusCompacted || DisplayID(m.CompactedInto) != res.Summary.ID {
				return false
			}
		}
		walk, err := b.Traverse(ctx, api.TraverseRequest{Start: user.ID, Direction: api.Out, Rels: []string{"depends_on"}})
		return err == nil && len(walk.Nodes) == 2 && walk.Nodes[1].ID == res.Summary.ID
	})
}

// TestMeshBriefFromPeers: B's brief lists what A learned since B last
// asked, within the budget; asked again, it no longer calls it new.
func TestMeshBriefFromPeers(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 2, nil)
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	if _, err := b.Context(ctx, api.ContextRequest{Namespace: "web"}); err != nil { // B asks once before
		t.Fatal(err)
	}
	own := remember(t, b, api.RememberRequest{Namespace: "web", Content: "B's own note about the CDN"})
	learned := remember(t, a, api.RememberRequest{Namespace: "web", Content: "Images are served through the imgproxy sidecar"})
	waitUntil(t, "A's memory on B, durable", func() bool { return has(b, learned.ID) && settled(b) })
	brief, err := b.Context(ctx, api.ContextRequest{Namespace: "web", Budget: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(brief.FromPeers) != 1 || brief.FromPeers[0].ID != learned.ID || brief.Tokens > brief.Budget {
		t.Fatalf("from_peers %+v (tokens %d of %d), want A's memory only; active %+v", brief.FromPeers, brief.Tokens, brief.Budget, brief.Active)
	}
	if len(brief.Active) != 1 || brief.Active[0].ID != own.ID {
		t.Fatalf("active %+v, want B's own memory", brief.Active)
	}
	again, err := b.Context(ctx, api.ContextRequest{Namespace: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.FromPeers) != 0 || len(again.Active) != 2 {
		t.Fatalf("asked again: from_peers %+v, %d active", again.FromPeers, len(again.Active))
	}
}

// TestMeshPullGoesOnPastARefusedDocument has a peer serve one document the
// puller refuses (as a peer on another version may) among hundreds of
// good ones, over more than one frame: the refusal is logged, the pull
// completes and saves its position, and every good document arrives.
func TestMeshPullGoesOnPastARefusedDocument(t *testing.T) {
	t.Parallel()
	skipIfShort(t)
	b := meshNodeWith(t, "", 2, nil, mesh.Config{SyncInterval: time.Hour})
	bad := remember(t, b, api.RememberRequest{Content: "served as a document nobody can load"})
	rec, err := b.store.Get(storage.KindMemory, bad.ID[2:])
	if err != nil {
		t.Fatal(err)
	}
	rec.Doc, rec.Heads = []byte("not an automerge document"), []string{strings.Repeat("00", 32)}
	if _, err := b.store.Commit(rec); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := newRand(seed)
	var good []string
	for i := range 600 { // about 2 MiB of documents: more than one frame
		good = append(good, remember(t, b, api.RememberRequest{Content: fmt.Sprintf("good memory %d %s", i, words(rng, 300))}).ID)
	}

	a := meshNodeWith(t, "", 1, nil, mesh.Config{SyncInterval: time.Hour})
	join(t, b, a)
	waitUntil(t, "a and b see each other", func() bool { return alivePeers(a) == 1 && alivePeers(b) == 1 })
	if err := a.Pull(context.Background()); err != nil {
		t.Fatalf("a pull with one refused document: %v", err)
	}
	for _, id := range good {
		if !has(a, id) {
			t.Fatalf("%s did not arrive: the refused document stopped the pull", id)
		}
	}
	if has(a, bad.ID) {
		t.Fatal("the refused document was stored")
	}
	if _, err := a.store.GetLocal("mesh/pos/" + b.DeviceID()); err != nil { // where the mesh keeps it
		t.Fatalf("the pull's position was not saved: %v", err)
	}
	st := a.LastPull(b.DeviceID())
	t.Logf("pull: %d documents received, %d rejected, %d bytes", st.Received, st.Rejected, st.Bytes)
	if st.Rejected != 1 {
		t.Errorf("the pull counted %d rejected documents, want 1", st.Rejected)
	}
	if st.Bytes <= 1<<20 {
		t.Errorf("the pull read %d bytes: the test needs more than one frame of documents", st.Bytes)
	}
}

// TestMeshWritesAfterRestoreReplicate restores a node's home from an
// older copy: its change log numbers go back, and the writes made after
// the restore reuse numbers a peer already pulled. Every one of them must
// still reach the peer.
func TestMeshWritesAfterRestoreReplicate(t *testing.T) {
	t.Parallel()
	skipIfShort(t)
	ctx := context.Background()
	homeA, backup := t.TempDir(), filepath.Join(t.TempDir(), "backup")
	hourly := mesh.Config{SyncInterval: time.Hour}
	a := meshNodeWith(t, homeA, 1, nil, hourly)
	b := meshNodeWith(t, "", 2, nil, hourly)
	join(t, a, b)
	first := remember(t, a, api.RememberRequest{Content: "before the backup"})
	waitUntil(t, "the first memory on B", func() bool { return has(b, first.ID) })
	a.Close()
	if err := os.CopyFS(backup, os.DirFS(homeA)); err != nil {
		t.Fatal(err)
	}

	a = meshNodeWith(t, homeA, 1, nil, hourly)
	waitUntil(t, "A and B see each other", func() bool { return alivePeers(a) == 1 && alivePeers(b) == 1 })
	for i := range 30 {
		res := remember(t, a, api.RememberRequest{Content: fmt.Sprintf("after the backup, lost with the restore %d", i)})
		waitUntil(t, "a memory on B", func() bool { return has(b, res.ID) })
	}
	if err := b.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	a.Close()

	// The restore, then writes while the mesh is off.
	if err := os.RemoveAll(homeA); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(homeA, os.DirFS(backup)); err != nil {
		t.Fatal(err)
	}
	offline := testNode(t, homeA)
	var written []string
	for i := range 50 {
		written = append(written, remember(t, offline, api.RememberRequest{Content: fmt.Sprintf("written after the restore %d", i)}).ID)
	}
	offline.Close()

	a = meshNodeWith(t, homeA, 1, nil, hourly)
	waitUntil(t, "A and B see each other", func() bool { return alivePeers(a) == 1 && alivePeers(b) == 1 })
	if err := b.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	var missing int
	for _, id := range written {
		if !has(b, id) {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d memories written after the restore never reached the peer", missing, len(written))
	}
}

// TestMeshReachReportsWhileAPeerMoves restarts a peer on a new port again
// and again while the other sends its reach reports every few
// milliseconds: memberlist rewrites the peer's address in its own node
// records when the new one announces itself, and the reports must not
// read those records (go test -race reports it when they do).
func TestMeshReachReportsWhileAPeerMoves(t *testing.T) {
	t.Parallel()
	skipIfShort(t)
	fast := mesh.Config{ProbeInterval: 200 * time.Millisecond, RetryInterval: 5 * time.Millisecond, SyncInterval: time.Hour}
	homeB := t.TempDir()
	a := meshNodeWith(t, "", 1, nil, fast)
	b := meshNodeWith(t, homeB, 2, nil, fast)
	join(t, a, b)
	for i := range 5 {
		waitUntil(t, fmt.Sprintf("a and b see each other (restart %d)", i), func() bool { return alivePeers(a) == 1 && alivePeers(b) == 1 })
		b.Close()
		b = meshNodeWith(t, homeB, 2, nil, fast)
	}
	waitUntil(t, "a and b see each other after the last restart", func() bool { return alivePeers(a) == 1 && alivePeers(b) == 1 })
}

// TestMeshPeersTellACleanStop: a peer that stops cleanly is shown as left,
// not dead.
func TestMeshPeersTellACleanStop(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 2, nil)
	a, b := nodes[0], nodes[1]
	b.Close()
	state := func() string {
		peers, err := a.Peers(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range peers {
			if p.Device == b.DeviceID() {
				return p.State
			}
		}
		return ""
	}
	waitUntil(t, "B no longer alive on A", func() bool { return state() != "alive" })
	if got := state(); got != "left" {
		t.Fatalf("a peer that stopped cleanly is shown %q, want left", got)
	}
}

// peerOf returns how n sees the peer device.
func peerOf(t testing.TB, n *Node, device string) api.Peer {
	t.Helper()
	peers, err := n.Peers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range peers {
		if p.Device == device {
			return p
		}
	}
	t.Fatalf("%s is not a peer", device)
	return api.Peer{}
}

// peerView returns how n sees the peer device: its state and the devices
// it is reached through.
func peerView(t testing.TB, n *Node, device string) (string, []string) {
	t.Helper()
	p := peerOf(t, n, device)
	return p.State, p.Via
}

// partialMesh starts a, b and c where a and b cannot reach each other and
// both reach c (a laptop behind NAT, a desktop, an always-on machine), and
// joins a and b through c.
func partialMesh(t *testing.T, mc mesh.Config) (a, b, c *Node) {
	skipIfShort(t) // three daemons waiting on probes and reports: seconds each
	fn := faultnet.New(1)
	a, b, c = meshNodeWith(t, "", 1, fn, mc), meshNodeWith(t, "", 2, fn, mc), meshNodeWith(t, "", 3, fn, mc)
	fn.Cut(addr(a), addr(b))
	join(t, c, a)
	join(t, c, b)
	waitUntil(t, "c sees a and b alive", func() bool { return alivePeers(c) == 2 })
	return a, b, c
}

// TestMeshPeersThroughOthers: a peer reached only through another is
// shown alive, through that peer; one reached directly, with no via.
func TestMeshPeersThroughOthers(t *testing.T) {
	t.Parallel()
	a, b, c := partialMesh(t, mesh.Config{ProbeInterval: 200 * time.Millisecond, RetryInterval: 500 * time.Millisecond, SyncInterval: time.Hour})
	for _, n := range []*Node{a, b} {
		other := map[*Node]*Node{a: b, b: a}[n]
		waitUntil(t, "a and b see each other through c", func() bool {
			state, via := peerView(t, n, other.DeviceID())
			return state == "alive" && slices.Equal(via, []string{c.DeviceID()})
		})
		if state, via := peerView(t, n, c.DeviceID()); state != "alive" || via != nil {
			t.Errorf("c, reached directly, is shown %s via %v", state, via)
		}
	}
	for _, n := range []*Node{a, b} {
		if state, via := peerView(t, c, n.DeviceID()); state != "alive" || via != nil {
			t.Errorf("c shows %s %s via %v, want alive, directly", n.DeviceID(), state, via)
		}
	}
}

// behindOf is how many documents n says the peer device lacks.
func behindOf(t testing.TB, n *Node, device string) int {
	t.Helper()
	return peerOf(t, n, device).Behind
}

// TestMeshBehindCountsWhatThePeerLacks: documents pushed to a peer that
// applied them are not counted as behind, and a peer reached only
// through another is not behind once it holds everything.
func TestMeshBehindCountsWhatThePeerLacks(t *testing.T) {
	t.Parallel()
	cfg := mesh.Config{ProbeInterval: 200 * time.Millisecond, RetryInterval: 500 * time.Millisecond, SyncInterval: time.Hour}
	a, b, c := partialMesh(t, cfg)
	var ids []string
	for i := range 20 {
		ids = append(ids, remember(t, a, api.RememberRequest{Content: fmt.Sprintf("pushed to c, then through c %d", i)}).ID)
	}
	waitUntil(t, "every memory on c", func() bool {
		return !slices.ContainsFunc(ids, func(id string) bool { return !has(c, id) })
	})
	waitUntil(t, "a says c lacks nothing", func() bool { return behindOf(t, a, c.DeviceID()) == 0 })
	// c may have passed them on to b already; while b still lacks every
	// one after a counted, a counted them all.
	n := behindOf(t, a, b.DeviceID())
	if missing := len(slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return has(b, id) })); missing == len(ids) && n < len(ids) {
		t.Fatalf("a says b lacks %d documents, b lacks at least the %d memories", n, len(ids))
	}
	// b pulls them from c (its pull from a fails: a is out of its reach).
	if err := b.Pull(context.Background()); err != nil {
		t.Log(err)
	}
	waitUntil(t, "every memory on b", func() bool {
		return !slices.ContainsFunc(ids, func(id string) bool { return !has(b, id) })
	})
	waitUntil(t, "a says b lacks nothing", func() bool { return behindOf(t, a, b.DeviceID()) == 0 })
}

// TestMeshRefusesWritesOfARevokedDevice: a memory a revoked device wrote
// after its revocation is refused, whoever passes it on (here a third
// member that was offline during the revocation), and so is its later
// edit of one it wrote before, which stays as it was, whatever the
// device's clock says.
func TestMeshRefusesWritesOfARevokedDevice(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 3, nil)
	a, b, c := nodes[0], nodes[1], nodes[2]
	ctx := context.Background()
	before := remember(t, b, api.RememberRequest{Content: "written before the revocation"})
	waitUntil(t, "b's memory on a", func() bool { return has(a, before.ID) })
	if _, err := a.Revoke(ctx, b.DeviceID()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the revocation on c", func() bool { return c.mesh.Authorize(b.DeviceID()) != nil })
	advance(b, -time.Hour) // b writes after the revocation, whatever its clock says
	after := remember(t, b, api.RememberRequest{Content: "written after the revocation"})
	content := "written before the revocation, edited after"
	if _, err := b.Update(ctx, before.ID, api.UpdateRequest{Content: &content}); err != nil {
		t.Fatal(err)
	}
	var docs []transport.Entry
	for _, id := range []string{after.ID, before.ID} {
		rec, err := b.store.Get(storage.KindMemory, strings.TrimPrefix(id, "m-"))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := b.store.GetDoc(storage.KindMemory, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, transport.Entry{Kind: byte(storage.KindMemory), ID: rec.ID, Heads: rec.Heads, Doc: doc})
	}
	err := a.mesh.Apply(c.DeviceID(), docs) // c passes on what b wrote
	if rej, ok := errors.AsType[*transport.RejectedError](err); !ok || rej.Rejected != 1 {
		t.Fatalf("applying the revoked device's later writes: %v, want the new memory rejected (the edit is left out of the other)", err)
	}
	if has(a, after.ID) {
		t.Fatal("a memory the revoked device wrote after its revocation was stored")
	}
	if !has(a, before.ID) {
		t.Fatal("a memory the revoked device wrote before its revocation was lost")
	}
	if got, err := a.Get(ctx, before.ID); err != nil || strings.Contains(got.Content, "edited after") {
		t.Fatalf("the revoked device's later edit reached a: %q (%v)", got.Content, err)
	}
}

// TestMeshPushCrossesAPartialPartition: a and b cannot reach each other,
// both reach c; a write on a reaches b by push, through c, with no
// anti-entropy pull (the sync interval is an hour), and the other way.
func TestMeshPushCrossesAPartialPartition(t *testing.T) {
	t.Parallel()
	a, b, c := partialMesh(t, mesh.Config{ProbeInterval: 200 * time.Millisecond, RetryInterval: 500 * time.Millisecond, SyncInterval: time.Hour})
	for _, n := range []*Node{a, b} { // each knows the other reaches c only
		other := map[*Node]*Node{a: b, b: a}[n]
		waitUntil(t, "a and b see each other through c", func() bool {
			_, via := peerView(t, n, other.DeviceID())
			return slices.Equal(via, []string{c.DeviceID()})
		})
	}
	fromA := remember(t, a, api.RememberRequest{Content: "written on a, for b through c"})
	fromB := remember(t, b, api.RememberRequest{Content: "written on b, for a through c"})
	waitUntil(t, "a's write on b", func() bool { return has(b, fromA.ID) })
	waitUntil(t, "b's write on a", func() bool { return has(a, fromB.ID) })
}

// TestMeshRevokedDeviceIsTold: a revoked device that missed its
// revocation (the revoking member disconnects it at once) learns it from
// the member it retries, and says so in its status; it then stops its
// membership, joins, pushes and pulls.
func TestMeshRevokedDeviceIsTold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := cluster(t, 2, nil)
	a, b := nodes[0], nodes[1]
	if _, err := a.Revoke(ctx, b.DeviceID()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "b learns it was revoked", func() bool {
		st, err := b.mesh.Status(ctx)
		return err == nil && slices.ContainsFunc(st.Errors, func(e string) bool { return strings.Contains(e, "revoked") })
	})
}

// TestMeshSessionSummaryReachesPeers ingests a session on one machine:
// the other lists it (from its summary) without its turns.
func TestMeshSessionSummaryReachesPeers(t *testing.T) {
	t.Parallel()
	nodes := cluster(t, 2, nil)
	s := nodetest.SampleSession()
	if _, err := nodes[0].IngestSession(context.Background(), s, "app"); err != nil {
		t.Fatal(err)
	}
	got := nodetest.SessionByID(t, nodes[1], s.ID)
	if got.Local || got.Device != nodes[0].DeviceID() || got.Turns != 7 || got.Client != "claude-code" ||
		!slices.Equal(got.FilesChanged, []string{"auth/token.go"}) {
		t.Fatalf("the peer lists %+v", got)
	}
	d, err := nodes[1].Session(context.Background(), s.ID)
	if err != nil || len(d.Transcript) != 0 {
		t.Fatalf("the peer shows %d turns, %v: turns stay on their machine", len(d.Transcript), err)
	}
	b, err := nodes[1].Context(context.Background(), api.ContextRequest{Namespace: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(b.FromPeers, func(it api.BriefItem) bool { return it.ID == got.SummaryID }) {
		t.Errorf("the peer's brief does not list the session under what other machines learned: %+v", b.FromPeers)
	}
}
