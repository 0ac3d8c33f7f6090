package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

var (
	behindSeeds = flag.Int("behind.seeds", 12, "number of seeds TestBehindIsExact runs")
	behindFirst = flag.Uint64("behind.first", 0, "the first seed TestBehindIsExact runs (0: drawn from the clock)")
)

// TestBehindIsExact drives random writes (new memories, edits, the same
// memory edited on two nodes, forgets, links and, in half the runs,
// namespace settings), pushes (some lost), and pulls between two or three
// stepped meshes, and after every step compares what each node says each
// peer lacks (behind) with a recount: the documents of its digest (those
// that may go to the peer) whose version the peer does not hold (merging
// ours into its copy would change it). Between two nodes each one knows
// everything the other got from it, and the two are equal at every step.
// With a third node, a peer may get a node's documents through the third
// (or the node the peer's through it), which the node learns only when
// the peer next pulls from it: until then it may count more, never fewer.
// So may a node that shares a namespace again, whose documents went
// nowhere while it kept them. A peer that refused documents it was sent
// (its namespace settings differed: one made a namespace local-only, and
// the other had not heard yet) is not checked from then on: the protocol
// does not tell the sender, which counts them as held.
func TestBehindIsExact(t *testing.T) {
	t.Parallel()
	first := *behindFirst
	if first == 0 {
		first = uint64(time.Now().UnixNano())
	}
	t.Logf("first seed %d (replay one: -run TestBehindIsExact -behind.first SEED -behind.seeds 1)", first)
	for seed := first; seed < first+uint64(*behindSeeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			if failures, trace := runBehind(t, seed); len(failures) > 0 {
				t.Errorf("seed %d:\n  %s\ntrace (last events):\n  %s", seed, strings.Join(failures, "\n  "),
					strings.Join(trace[max(0, len(trace)-30):], "\n  "))
			}
		})
	}
}

// behindRun is one run of TestBehindIsExact over a simulation's nodes.
type behindRun struct {
	*sim
	// known[a][b] is what node a knows of the documents of its own that
	// node b holds (see TestBehindIsExact).
	known [][]knows
	// settings: namespace settings change during the run.
	settings bool
	// held memoises holdsVersion's answer for a pair of document
	// versions (theirs, ours): most documents do not change between two
	// steps, and loading them into Automerge is the recount's cost.
	held map[[2][sha256.Size]byte]bool
}

// What a node knows of the documents of its own a peer holds.
type knows int

const (
	knowsAll      knows = iota // all of them: behind is exact
	knowsLess                  // not those the peer got through a third node: behind may count more
	knowsRefusals              // not whether the peer refused some it was sent: unchecked
)

func runBehind(t *testing.T, seed uint64) (failures, trace []string) {
	rng := rand.New(rand.NewPCG(seed, 0xbe41d))
	s := newSim(t, seed, rng, 2+rng.IntN(2))
	defer s.close()
	r := &behindRun{sim: s, known: make([][]knows, len(s.nodes)), settings: rng.IntN(2) == 0, held: map[[2][sha256.Size]byte]bool{}}
	for a := range s.nodes {
		r.known[a] = make([]knows, len(s.nodes))
		for b := range s.nodes {
			// The registry lists every device, so that peers shows each.
			if _, err := s.nodes[a].n.registry.AddDevice(s.device(b), fmt.Sprintf("sim%d", b), s.device(a)); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.compare()
	for s.event = 0; s.event < 60 && len(s.failures) == 0; s.event++ {
		s.now = s.now.Add(time.Second)
		local := r.localOnly()
		r.step()
		r.shared(local)
		r.compare()
	}
	return s.failures, s.trace
}

// step runs one event drawn from the seed.
func (r *behindRun) step() {
	s := r.sim
	a := s.rng.IntN(len(s.nodes))
	b := (a + 1 + s.rng.IntN(len(s.nodes)-1)) % len(s.nodes)
	switch x := s.rng.IntN(100); {
	case x < 20:
		s.remember(a, s.anyNamespace())
	case x < 30:
		s.update(a, s.pickMemory(a))
	case x < 35:
		s.updateOnTwo(a, b)
	case x < 38:
		s.forget(a)
	case x < 43:
		s.linkAny(a)
	case x < 47 && !r.settings:
		s.remember(a, s.anyNamespace())
	case x < 47:
		sync := model.SyncAll
		if s.rng.IntN(2) == 0 {
			sync = model.SyncLocal
		}
		s.setSync(a, simNamespaces[1+s.rng.IntN(2)], sync)
	case x < 72:
		r.push(a)
	default:
		r.pull(a, b)
	}
}

// push runs node a's pusher: each peer's batches are delivered, or lost.
func (r *behindRun) push(a int) {
	s := r.sim
	m := s.nodes[a].n.mesh
	m.QueuePushes()
	for b := range s.nodes {
		if b == a {
			continue
		}
		disagreed := r.disagree(a, b)
		lost, sent := 0, 0
		for {
			batch, ok := m.NextPush(s.device(b))
			if !ok {
				break
			}
			if s.rng.IntN(4) == 0 {
				lost++
				continue
			}
			if err := m.PushTo(s.device(b), batch); err != nil {
				s.tb.Fatalf("seed %d: push: %v", s.seed, err)
			}
			s.serve.Wait()
			sent++
		}
		if sent > 0 {
			r.received(b, a, disagreed)
		}
		if lost+sent > 0 {
			s.logf("push %d->%d: %d batches, %d lost", a, b, sent, lost)
		}
	}
}

// pull runs one pull of node a from node b.
func (r *behindRun) pull(a, b int) {
	s := r.sim
	disagreed := r.disagree(a, b)
	st, err := s.nodes[a].n.mesh.PullFrom(context.Background(), s.device(b))
	s.serve.Wait()
	s.nodes[b].n.mesh.Kicked() // pulls back are not run: the seed draws pulls
	if err != nil {
		s.tb.Fatalf("seed %d: pull %d<-%d: %v", s.seed, a, b, err)
	}
	if st.Received > 0 {
		r.received(a, b, disagreed)
	}
	// a's pull from b tells b what a holds, unless a refused some of it,
	// or did so before: b may take a refused document as held for good.
	switch {
	case st.Rejected > 0 || disagreed || r.disagree(a, b):
		r.known[b][a] = knowsRefusals
	case r.known[b][a] != knowsRefusals:
		r.known[b][a] = knowsAll
	}
	s.logf("pull %d<-%d: offered %d received %d", a, b, st.Offered, st.Received)
}

// localOnly returns the namespaces each node keeps to itself.
func (r *behindRun) localOnly() [][]bool {
	out := make([][]bool, len(r.nodes))
	for a, sn := range r.nodes {
		for _, ns := range simNamespaces {
			out[a] = append(out[a], sn.n.mesh.LocalOnly(ns))
		}
	}
	return out
}

// shared notes the nodes that share a namespace they kept to themselves
// before (local): whether a peer holds its documents, none of which went
// between them since, no exchange told; the peer's next pull does.
func (r *behindRun) shared(local [][]bool) {
	for a, was := range local {
		for i, now := range r.localOnly()[a] {
			if was[i] && !now {
				for b := range r.known[a] {
					r.known[a][b] = max(r.known[a][b], knowsLess)
				}
			}
		}
	}
}

// disagree reports whether nodes a and b see some namespace's sync
// setting differently: one may refuse what the other sends.
func (r *behindRun) disagree(a, b int) bool {
	return slices.ContainsFunc(simNamespaces, func(ns string) bool {
		return r.nodes[a].n.mesh.LocalOnly(ns) != r.nodes[b].n.mesh.LocalOnly(ns)
	})
}

// received notes that node b received documents from node from, whose
// namespace settings differed before (disagreed) or after: b may have
// refused some. A third node no longer knows all that b holds of its
// documents, nor b all that the third holds of the documents b now has.
func (r *behindRun) received(b, from int, disagreed bool) {
	if disagreed || r.disagree(b, from) {
		r.known[from][b] = knowsRefusals
	}
	for a := range r.known {
		if a != from && a != b {
			r.known[a][b] = max(r.known[a][b], knowsLess)
			r.known[b][a] = max(r.known[b][a], knowsLess)
		}
	}
}

// compare compares, for every node and peer, behind with the recount.
func (r *behindRun) compare() {
	s := r.sim
	for a, sn := range s.nodes {
		peers, err := sn.n.Peers(context.Background())
		if err != nil {
			s.tb.Fatal(err)
		}
		for b := range s.nodes {
			if b == a {
				continue
			}
			i := slices.IndexFunc(peers, func(p api.Peer) bool { return p.Device == s.device(b) })
			if i < 0 {
				s.failf("node %d does not list node %d among its peers", a, b)
				continue
			}
			got, want := peers[i].Behind, r.lacking(sn.n, s.nodes[b].n)
			switch k := r.known[a][b]; {
			case k == knowsAll && got != want:
				s.failf("event %d: node %d says node %d lacks %d documents; it lacks %d", s.event, a, b, got, want)
			case k == knowsLess && got < want:
				s.failf("event %d: node %d says node %d lacks %d documents; it lacks %d (more than said)", s.event, a, b, got, want)
			}
		}
	}
}

// lacking counts the documents of node a that it compares with node b
// (mayGo) and whose version b does not hold: merging a's into b's copy
// would change it.
func (r *behindRun) lacking(a, b *Node) int {
	r.tb.Helper()
	n := 0
	for _, kind := range []storage.Kind{storage.KindMesh, storage.KindPurge, storage.KindMemory, storage.KindEdge} {
		err := a.store.All(kind, func(rec storage.Record) error {
			if !mayGo(a, rec) {
				return nil
			}
			held, err := r.holdsVersion(b, kind, rec.ID, a)
			if !held {
				n++
			}
			return err
		})
		if err != nil {
			r.tb.Fatal(err)
		}
	}
	return n
}

// mayGo reports whether a document of a's is one that a compares with
// its peers (its digest's): no memory of a local-only namespace, no edge
// at one, nor, while a namespace is local-only, at a memory a does not
// hold (which only its holder can tell private or not).
func mayGo(a *Node, rec storage.Record) bool {
	anyLocal := slices.ContainsFunc(simNamespaces, a.mesh.LocalOnly)
	for _, t := range rec.Terms {
		switch {
		case rec.Kind == storage.KindMemory && t.Field == "ns":
			return !a.mesh.LocalOnly(t.Value)
		case rec.Kind == storage.KindEdge && (t.Field == "from" || t.Field == "to"):
			id, isMemory := strings.CutPrefix(t.Value, IDPrefix)
			m, held := simMemory(a, id)
			if isMemory && (held && a.mesh.LocalOnly(m.Namespace) || !held && anyLocal) {
				return false
			}
		}
	}
	return true
}

// sameTombstone reports whether x and y hold the same purges.
func sameTombstone(x, y crdt.Tombstone) (bool, error) {
	a, err := x.Encode()
	if err != nil {
		return false, err
	}
	b, err := y.Encode()
	return bytes.Equal(a, b), err
}

// holdsVersion reports whether b's copy of a document holds a's version.
func (r *behindRun) holdsVersion(b *Node, kind storage.Kind, id string, a *Node) (bool, error) {
	theirs, err := b.store.GetDoc(kind, id)
	if storageNotFound(err) {
		return kind == storage.KindMemory && b.purged(id), nil
	}
	if err != nil {
		return false, err
	}
	ours, err := a.store.GetDoc(kind, id)
	if err != nil {
		return false, err
	}
	key := [2][sha256.Size]byte{sha256.Sum256(theirs), sha256.Sum256(ours)}
	if held, ok := r.held[key]; ok {
		return held, nil
	}
	held, err := versionHeld(kind, theirs, ours)
	if err == nil {
		r.held[key] = held
	}
	return held, err
}

// versionHeld reports whether merging ours into theirs leaves theirs as
// it was.
func versionHeld(kind storage.Kind, theirs, ours []byte) (bool, error) {
	switch kind {
	case storage.KindPurge:
		x, err := crdt.DecodeTombstone(theirs)
		if err != nil {
			return false, err
		}
		y, err := crdt.DecodeTombstone(ours)
		if err != nil {
			return false, err
		}
		merged, err := crdt.MergeTombstones(x, y)
		if err != nil {
			return false, err
		}
		return sameTombstone(merged, x)
	case storage.KindMemory:
		return mergeChanges(crdt.LoadMemoryDoc, theirs, ours)
	case storage.KindEdge:
		return mergeChanges(crdt.LoadEdgeDoc, theirs, ours)
	}
	return mergeChanges(crdt.LoadMeshDoc, theirs, ours)
}

// mergeable is an Automerge document of one of crdt's kinds.
type mergeable[D any] interface {
	Heads() []string
	Merge(D) error
	Close()
}

// mergeChanges reports whether merging ours into theirs leaves theirs as
// it was.
func mergeChanges[D mergeable[D]](load func(actor string, data []byte) (D, error), theirs, ours []byte) (bool, error) {
	const actor = "0123456789abcdef"
	x, err := load(actor, theirs)
	if err != nil {
		return false, err
	}
	defer x.Close()
	y, err := load(actor, ours)
	if err != nil {
		return false, err
	}
	defer y.Close()
	before := slices.Sorted(slices.Values(x.Heads()))
	if err := x.Merge(y); err != nil {
		return false, err
	}
	return slices.Equal(before, slices.Sorted(slices.Values(x.Heads()))), nil
}
