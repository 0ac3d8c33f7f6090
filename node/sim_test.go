package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/internal/clock"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// The deterministic simulation of the mesh. One seed drives 3 to 7 real
// nodes (Pebble, Automerge, the search indexer) whose meshes run stepped
// (mesh.Config.Network): no QUIC, no memberlist, no loop; the simulation
// calls the loops' steps from one goroutine over an in-memory network
// (transport.Pipe), in an order drawn from the seed, with faults drawn from
// it too. Then it heals everything, syncs until quiet and checks the
// invariants. A failing seed is printed with its trace and replays with
// -sim.seed.
var (
	simSeeds = flag.Int("sim.seeds", 0, "number of seeds TestSim runs (0: the suite's default)")
	simSeed  = flag.Uint64("sim.seed", 0, "run this one seed of TestSim (0: none)")
	simFirst = flag.Uint64("sim.first", 1, "the first seed of a TestSim run of several")
	simTrace = flag.Bool("sim.trace", false, "log the trace of every seed")
	simLog   = flag.Bool("sim.log", false, "write the nodes' warnings to standard error")
)

// simDefaultSeeds is how many seeds the suite runs; simShortSeeds, how
// many it runs under -short (./test -short).
const (
	simDefaultSeeds = 200
	simShortSeeds   = 20
)

func TestSim(t *testing.T) {
	t.Parallel()
	first, count := *simFirst, *simSeeds
	if count <= 0 {
		count = simDefaultSeeds
		if testing.Short() {
			count = simShortSeeds
			t.Logf("-short: %d of the %d seeds; ./test runs them all", simShortSeeds, simDefaultSeeds)
		}
	}
	if *simSeed != 0 {
		first, count = *simSeed, 1
	}
	start := time.Now()
	var failed, revoking, standing, refused atomic.Int32
	// Seeds are independent: they run side by side (go test's -parallel).
	t.Run("seeds", func(t *testing.T) {
		for seed := first; seed < first+uint64(count); seed++ {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				r := runSim(t, seed)
				if r.revocations > 0 {
					revoking.Add(1)
				}
				if r.standing > 0 {
					standing.Add(1)
				}
				refused.Add(int32(r.refused))
				if *simTrace {
					t.Logf("trace %s\n%s", r.hash, strings.Join(r.trace, "\n"))
				}
				if len(r.failures) > 0 {
					failed.Add(1)
					t.Errorf("seed %d failed (replay: go test ./node -run 'TestSim$' -sim.seed %d -sim.trace):\n  %s\ntrace (last events):\n  %s",
						seed, seed, strings.Join(r.failures, "\n  "), strings.Join(r.trace[max(0, len(r.trace)-40):], "\n  "))
				}
			})
		}
	})
	took := time.Since(start)
	t.Logf("simulated seeds %d..%d: %d failed, %.1f seeds/s; %d seeds revoked a node, %d kept a revocation standing, %d writes of revoked nodes beyond their frontiers held absent",
		first, first+uint64(count)-1, failed.Load(), float64(count)/took.Seconds(), revoking.Load(), standing.Load(), refused.Load())
}

// TestSimEdgeAtALostMemory replays a seed where a link reached one peer
// but its memory did not, and a restore then lost the memory for good on
// its author: the peer keeps the edge to itself while a namespace is
// local-only (only a node that holds the memory can tell whether it is
// private), so the edge need not be everywhere.
func TestSimEdgeAtALostMemory(t *testing.T) {
	t.Parallel()
	r := runSimWith(t, 86358, false)
	for _, f := range r.failures {
		t.Error(f)
	}
	if t.Failed() {
		t.Logf("trace:\n%s", strings.Join(r.trace, "\n"))
	}
}

// TestSimFound replays seeds that long runs found failing.
func TestSimFound(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		seed uint64
		what string
	}{
		{101442, "two nodes revoke each other; until the senior one's revocation arrives, every node sweeps the other's memory and the edits two members made of it, which must come back from what each kept aside"},
		{102489, "a restore erases a memory its author gave only to a node revoked since: nobody takes it from there"},
		{100380, "a restore erases a purge its author gave only to a node revoked since: the memory comes back"},
		{103270, "a restore erases a revocation before it left its node, which revokes the device again later with a wider frontier"},
		{110766, "a node purges a memory, is restored from a backup of before, is revoked, and purges it again: the tombstones keep the first purge"},
		{111911, "a restore erases a purge whose tombstone only nodes revoked since held with it: a tombstone of another purge is not a copy of it"},
		{117686, "a member edits a memory again after a sweep took out its edit built on refused work: the two versions kept aside cannot merge, and the sweep goes on"},
		{122037, "a sweep takes a member's edit out for a revocation voided later, after the member made the memory's namespace local-only: its own edit still comes back"},
		{121813, "a revoked node's purge, lost since in a restore, erased a memory where it reached before the revocation"},
		{105077, "a member links its memory to a revoked node's that every node refuses, while a namespace is local-only: the edge stays with it"},
	} {
		r := runSim(t, c.seed)
		for _, f := range r.failures {
			t.Errorf("seed %d (%s): %s", c.seed, c.what, f)
		}
		if len(r.failures) > 0 {
			t.Logf("trace of seed %d:\n%s", c.seed, strings.Join(r.trace, "\n"))
		}
	}
}

// TestSimReplays runs seeds twice: each gives the same trace.
func TestSimReplays(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{7} {
		a, b := runSim(t, seed), runSim(t, seed)
		if a.hash != b.hash {
			i := 0
			for i < min(len(a.trace), len(b.trace)) && a.trace[i] == b.trace[i] {
				i++
			}
			t.Errorf("seed %d: traces %s and %s differ from event %d:\n  %s\n  %s", seed, a.hash, b.hash, i,
				strings.Join(a.trace[i:min(i+3, len(a.trace))], " | "), strings.Join(b.trace[i:min(i+3, len(b.trace))], " | "))
		}
		t.Logf("seed %d: trace %s (%d events)", seed, a.hash, len(a.trace))
	}
}

type simResult struct {
	trace    []string
	hash     string
	failures []string
	// revocations made, standing at the end, and writes of revoked nodes
	// beyond their frontiers, which the checks held absent everywhere
	revocations, standing, refused int
}

// sim is one simulated run.
type sim struct {
	tb     testing.TB
	seed   uint64
	rng    *rand.Rand
	dir    string
	now    time.Time
	nodes  []*simNode
	cut    [][]bool       // cut[a][b]: a cannot reach b
	lose   map[[2]int]int // the next stream a opens to b dies after this many frames
	trace  []string
	serve  sync.WaitGroup // streams being served
	healed bool           // every fault ended

	ops       []*simOp
	setAll    map[string]int // event of the last "sync all" of a namespace
	event     int
	failures  []string
	memSerial int

	// With revocations, node 0 admits every node to the registry at the
	// start, streams open only between nodes that admit each other (as
	// the TLS handshake decides), and nodes revoke each other.
	revocations bool
	revoked     []*simRevocation
}

// simRevocation is a revocation a node made: of whom, when, and which of
// the revoked node's writes the revoker held then (its frontier).
type simRevocation struct {
	by, of int
	event  int
	at     time.Time // the revoker's clock: tells apart two revocations of one pair
	held   map[*simOp]bool
}

type simNode struct {
	i      int
	home   string
	n      *Node
	ids    *rand.ChaCha8 // the node's id source
	skew   bool          // refuses some documents (another version)
	backup string        // a copy of the home taken earlier, if any
}

// simOp is an acknowledged write.
type simOp struct {
	kind  string // remember, update, forget, purge, link
	node  int
	event int
	id    string // memory id (edge id for a link)
	from  string // link: the endpoints' memory ids
	to    string
	text  string // remember, update: the text written
	local bool   // written in a namespace local-only on every node
	ns    string
	lost  bool // erased by a restore before it left its machine
	// erased on its author by a restore after it left its machine: it
	// comes back only as far as the replication policy lets it
	away bool
	// the nodes that held it after each restore that erased it on the
	// restored node: should every node of one of these sets end revoked,
	// the write may be gone with them (members take nothing from a
	// revoked node, whoever wrote it)
	keptBy [][]int
}

var simNamespaces = []string{"shared", "team", "private"}

func runSim(tb testing.TB, seed uint64) simResult {
	return runSimWith(tb, seed, true)
}

// runSimWith runs one seed, with or without revocations (the seeds that
// replay what earlier versions of the simulation found run without).
func runSimWith(tb testing.TB, seed uint64, revocations bool) simResult {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	s := newSim(tb, seed, rng, 3+rng.IntN(5))
	defer s.close()
	if revocations {
		s.admitAll()
	}
	events := 30 + s.rng.IntN(50)
	for s.event = 0; s.event < events; s.event++ {
		s.now = s.now.Add(time.Second)
		if s.revocations && s.rng.IntN(100) < 5 {
			s.revocationEvent()
		} else {
			s.step()
		}
		s.sweep()
	}
	s.heal()
	s.check()
	h := sha256.New()
	for _, line := range s.trace {
		h.Write([]byte(line + "\n"))
	}
	r := simResult{trace: s.trace, hash: hex.EncodeToString(h.Sum(nil))[:16], failures: s.failures, revocations: len(s.revoked)}
	if s.revocations {
		standing := s.judge()
		r.standing = len(standing)
		for _, op := range s.ops {
			if !op.lost && s.beyond(op, standing) {
				r.refused++
			}
		}
	}
	return r
}

// newSim starts count nodes whose ids and keys come from seed, and events
// from rng. Close closes them.
func newSim(tb testing.TB, seed uint64, rng *rand.Rand, count int) *sim {
	dir, err := os.MkdirTemp(simTempRoot(), "memmesh-sim-")
	if err != nil {
		tb.Fatal(err)
	}
	s := &sim{
		tb:     tb,
		seed:   seed,
		rng:    rng,
		dir:    dir,
		now:    time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		lose:   map[[2]int]int{},
		setAll: map[string]int{},
	}
	s.cut = make([][]bool, count)
	for i := range count {
		s.cut[i] = make([]bool, count)
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:], seed)
		key[8] = byte(i)
		sn := &simNode{i: i, home: filepath.Join(dir, fmt.Sprintf("n%d", i)), ids: rand.NewChaCha8(key)}
		if err := writeSimIdentity(sn.home, key); err != nil {
			tb.Fatal(err)
		}
		s.nodes = append(s.nodes, sn)
		s.open(sn)
	}
	s.logf("%d nodes", count)
	return s
}

// close closes the nodes, in parallel (the run is over), and removes
// their homes.
func (s *sim) close() {
	var wg sync.WaitGroup
	for _, sn := range s.nodes {
		if sn.n != nil {
			wg.Go(func() { sn.n.Close() })
		}
	}
	wg.Wait()
	os.RemoveAll(s.dir)
}

// simTempRoot is where the homes of a run go: shared memory when the
// machine has it, where Pebble's fsyncs cost nothing (a crash here is a
// restart: nothing acknowledged is lost either way), else the temporary
// directory.
func simTempRoot() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return ""
}

// unallocatedFS is the OS's filesystem without preallocation. Pebble
// reserves each write-ahead log's room ahead (110 % of a memtable, 35 MiB);
// in shared memory that zeroes the pages, and freeing them deletes as
// much: three quarters of a seed's CPU went there. The sim's logs are
// small, and the space they take is not what it tests.
type unallocatedFS struct{ vfs.FS }

type unallocatedFile struct{ vfs.File }

func (unallocatedFile) Preallocate(offset, length int64) error { return nil }

func (fs unallocatedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return unallocatedFile{f}, nil
}

func (fs unallocatedFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return unallocatedFile{f}, nil
}

// writeSimIdentity writes the device key drawn from seed into home.
func writeSimIdentity(home string, seed [32]byte) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, transport.IdentityFile), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

func (s *sim) logf(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf("%03d ", s.event)+fmt.Sprintf(format, args...))
}

func (s *sim) failf(format string, args ...any) {
	s.failures = append(s.failures, fmt.Sprintf(format, args...))
}

// open starts the node sn from its home.
func (s *sim) open(sn *simNode) {
	log := slog.New(slog.DiscardHandler)
	if *simLog {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("node", sn.i)
	}
	n, err := New(Config{
		Home:   sn.home,
		Logger: log,
		Clock:  clock.WithNow(func() time.Time { return s.now }),
		Rand:   sn.ids,
		// A small ballast: the sim's homes are many and small.
		MinFreeSpace: 1 << 20,
		// Restarts and erasures do not wait for the index's writes.
		IndexFlushDelay: -1,
		FS:              unallocatedFS{vfs.Default},
		Mesh: &mesh.Config{
			Name:    fmt.Sprintf("sim%d", sn.i),
			Network: simNetwork{s, sn.i},
			Members: simMembers{s, sn.i},
		},
	})
	if err != nil {
		s.tb.Fatalf("seed %d: open node %d: %v", s.seed, sn.i, err)
	}
	if err := n.Start(context.Background()); err != nil {
		n.Close()
		s.tb.Fatalf("seed %d: start node %d: %v", s.seed, sn.i, err)
	}
	sn.n = n
}

// device is the device id of node i.
func (s *sim) device(i int) string { return s.nodes[i].n.DeviceID() }

func (s *sim) index(device string) int {
	for i, sn := range s.nodes {
		if sn.n.DeviceID() == device {
			return i
		}
	}
	return -1
}

// simMembers is the membership of node self: the nodes it can reach.
type simMembers struct {
	s    *sim
	self int
}

func (m simMembers) Alive() []string {
	var out []string
	for i := range m.s.nodes {
		if i != m.self && !m.s.cut[m.self][i] {
			out = append(out, m.s.device(i))
		}
	}
	return out
}

// simNetwork opens node self's streams: an in-memory pipe whose other end
// the target node serves at once, with the faults the simulation set.
type simNetwork struct {
	s    *sim
	self int
}

var errSimUnreachable = errors.New("sim: unreachable")

func (n simNetwork) Open(ctx context.Context, device, addr string, typ transport.StreamType) (transport.FrameStream, error) {
	s := n.s
	to := s.index(device)
	if to < 0 || s.cut[n.self][to] {
		return nil, errSimUnreachable
	}
	if s.revocations && typ != transport.StreamAppeal {
		// Both ends authorize each other, as at a TLS handshake.
		if err := s.nodes[n.self].n.mesh.Authorize(device); err != nil {
			return nil, err
		}
		if err := s.nodes[to].n.mesh.Authorize(s.device(n.self)); err != nil {
			return nil, err
		}
	}
	client, server := transport.Pipe(s.device(n.self), device)
	var c transport.FrameStream = client
	srv := &simEnd{FrameStream: server, left: -1}
	if k, ok := s.lose[[2]int{n.self, to}]; ok {
		delete(s.lose, [2]int{n.self, to})
		srv.left = k
	}
	srv.refuse = s.nodes[to].skew
	if s.nodes[n.self].skew {
		c = &simEnd{FrameStream: client, left: -1, refuse: true}
	}
	target := s.nodes[to].n
	s.serve.Add(1)
	go func() {
		defer s.serve.Done()
		target.mesh.Serve(typ, srv)
	}()
	return c, nil
}

// simEnd is a stream end with faults: it dies after left frames read or
// written (never when negative), and with refuse set it stands for a node
// of another version that cannot read some documents (memories whose id
// starts with a digit): their bytes arrive as something it cannot load.
type simEnd struct {
	transport.FrameStream
	left   int
	refuse bool
	dead   atomic.Bool
}

func (e *simEnd) tick() error {
	if e.left < 0 {
		return nil
	}
	if e.left == 0 {
		e.dead.Store(true)
		e.Abort()
		return transport.ErrAborted
	}
	e.left--
	return nil
}

func (e *simEnd) ReadFrame(limit int) (byte, []byte, error) {
	if err := e.tick(); err != nil {
		return 0, nil, err
	}
	typ, p, err := e.FrameStream.ReadFrame(limit)
	if err != nil || !e.refuse || typ != transport.FrameDocs {
		return typ, p, err
	}
	docs, derr := transport.DecodeEntries(p)
	if derr != nil {
		return typ, p, err
	}
	for i, d := range docs {
		if storage.Kind(d.Kind) == storage.KindMemory && d.ID[0] >= '2' && d.ID[0] <= '7' {
			docs[i].Doc = []byte("a document of another version")
		}
	}
	return typ, transport.AppendEntries(nil, docs), nil
}

func (e *simEnd) WriteFrame(typ byte, p []byte) error {
	if err := e.tick(); err != nil {
		return err
	}
	return e.FrameStream.WriteFrame(typ, p)
}

// step runs one event drawn from the seed.
func (s *sim) step() {
	ctx := context.Background()
	a := s.rng.IntN(len(s.nodes))
	b := (a + 1 + s.rng.IntN(len(s.nodes)-1)) % len(s.nodes)
	na := s.nodes[a].n
	switch r := s.rng.IntN(100); {
	case r < 16:
		s.remember(a, s.anyNamespace())
	case r < 22:
		s.update(a, s.pickMemory(a))
	case r < 27:
		s.updateOnTwo(a, b)
	case r < 30:
		s.forget(a)
	case r < 32:
		if id := s.pickMemory(a); id != "" {
			// A purge whose erasure of old files fails still stored its
			// tombstone: it counts as written.
			if _, err := na.Purge(ctx, id); err == nil || na.purged(id) {
				s.acked(&simOp{kind: "purge", node: a, id: id})
			}
		}
	case r < 36:
		s.linkAny(a)
	case r < 39:
		ns := simNamespaces[1+s.rng.IntN(2)]
		sync := model.SyncAll
		if s.rng.IntN(2) == 0 {
			sync = model.SyncLocal
		}
		s.setSync(a, ns, sync)
	case r < 55:
		s.push(a)
	case r < 70:
		s.pull(a, b)
	case r < 74:
		s.kicks(a)
	case r < 78:
		// A partition: the nodes split in two groups.
		side := make([]bool, len(s.nodes))
		for i := range side {
			side[i] = s.rng.IntN(2) == 0
		}
		for i := range s.cut {
			for j := range s.cut[i] {
				s.cut[i][j] = side[i] != side[j]
			}
		}
		s.logf("partition %v", side)
	case r < 81:
		s.cut[a][b], s.cut[b][a] = true, true
		s.logf("cut %d-%d", a, b)
	case r < 85:
		for i := range s.cut {
			clear(s.cut[i])
		}
		s.logf("heal the network")
	case r < 89:
		k := s.rng.IntN(6)
		s.lose[[2]int{a, b}] = k
		s.logf("the next stream %d->%d dies after %d frames", a, b, k)
	case r < 92:
		s.restart(a, "crash")
	case r < 95:
		if s.nodes[a].backup == "" {
			s.takeBackup(a)
		} else {
			s.restore(a)
		}
	default:
		s.nodes[a].skew = !s.nodes[a].skew
		s.logf("node %d refuses some documents: %v", a, s.nodes[a].skew)
	}
}

func (s *sim) acked(op *simOp) {
	op.event = s.event
	s.ops = append(s.ops, op)
	s.logf("node %d: %s %s %s", op.node, op.kind, op.id, op.text)
}

// anyNamespace draws one of the simulation's namespaces.
func (s *sim) anyNamespace() string {
	return simNamespaces[s.rng.IntN(len(simNamespaces))]
}

// link links the memories from and to on node a.
func (s *sim) link(a int, from, to string) {
	e, err := s.nodes[a].n.Link(context.Background(), api.LinkRequest{From: DisplayID(from), Rel: "related_to", To: DisplayID(to)})
	if err != nil {
		s.logf("node %d link: %v", a, err)
		return
	}
	s.acked(&simOp{kind: "link", node: a, id: e.ID, from: from, to: to})
}

// setSync sets how namespace ns syncs on node a.
func (s *sim) setSync(a int, ns, sync string) {
	if _, err := s.nodes[a].n.SetNamespace(context.Background(), ns, api.NamespaceChange{Sync: &sync}); err != nil {
		s.tb.Fatalf("seed %d: ns set: %v", s.seed, err)
	}
	if sync == model.SyncAll {
		s.setAll[ns] = s.event
	}
	s.acked(&simOp{kind: "ns", node: a, ns: ns, text: sync})
}

func (s *sim) remember(a int, ns string) {
	s.memSerial++
	text := fmt.Sprintf("seed %d fact %d: component %d uses port %d", s.seed, s.memSerial, s.rng.IntN(1000), s.rng.IntN(65536))
	n := s.nodes[a].n
	res, err := n.Remember(context.Background(), api.RememberRequest{Namespace: ns, Content: text})
	if err != nil {
		s.tb.Fatalf("seed %d: remember: %v", s.seed, err)
	}
	id := strings.TrimPrefix(res.ID, IDPrefix)
	// When every node sees the namespace local-only, the setting merged
	// from all of them is local-only too: until someone sets it to sync,
	// the memory may never leave its machine.
	local := true
	for _, sn := range s.nodes {
		local = local && sn.n.mesh.LocalOnly(ns)
	}
	s.acked(&simOp{kind: "remember", node: a, id: id, text: text, ns: ns, local: local})
}

func (s *sim) update(a int, id string) {
	if id == "" {
		return
	}
	s.memSerial++
	text := fmt.Sprintf("seed %d revision %d: component %d moved to port %d", s.seed, s.memSerial, s.rng.IntN(1000), s.rng.IntN(65536))
	if _, err := s.nodes[a].n.Update(context.Background(), id, api.UpdateRequest{Content: &text}); err != nil {
		s.logf("node %d: update %s refused: %v", a, id, err)
		return
	}
	s.acked(&simOp{kind: "update", node: a, id: id, text: text})
}

// updateOnTwo updates a memory on nodes a and b before they sync.
func (s *sim) updateOnTwo(a, b int) {
	if id := s.pickMemory(a); id != "" && has(s.nodes[b].n, id) {
		s.update(a, id)
		s.update(b, id)
	}
}

// forget archives a memory node a holds.
func (s *sim) forget(a int) {
	if id := s.pickMemory(a); id != "" {
		if _, err := s.nodes[a].n.Forget(context.Background(), id); err == nil {
			s.acked(&simOp{kind: "forget", node: a, id: id})
		}
	}
}

// linkAny links two memories node a holds.
func (s *sim) linkAny(a int) {
	if from, to := s.pickMemory(a), s.pickMemory(a); from != "" && to != "" && from != to {
		s.link(a, from, to)
	}
}

// pickMemory draws a memory node a holds (live ones; "" when none).
func (s *sim) pickMemory(a int) string {
	var ids []string
	s.nodes[a].n.store.All(storage.KindMemory, func(rec storage.Record) error {
		ids = append(ids, rec.ID)
		return nil
	})
	if len(ids) == 0 {
		return ""
	}
	return ids[s.rng.IntN(len(ids))]
}

// push runs node a's pusher: it queues its new changes, then delivers
// each peer's batches, some twice, some in another order, some never.
func (s *sim) push(a int) {
	m := s.nodes[a].n.mesh
	m.QueuePushes()
	for b := range s.nodes {
		if b == a {
			continue
		}
		var batches [][]transport.Entry
		for {
			batch, ok := m.NextPush(s.device(b))
			if !ok {
				break
			}
			batches = append(batches, batch)
		}
		if len(batches) == 0 {
			continue
		}
		how := "in order"
		switch r := s.rng.IntN(10); {
		case s.healed:
		case r == 0:
			how = "lost"
			batches = nil
		case r == 1:
			how = "twice"
			batches = append(batches, batches...)
		case r == 2 && len(batches) > 1:
			how = "reordered"
			slices.Reverse(batches)
		}
		errs := 0
		var last error
		for _, batch := range batches {
			if err := m.PushTo(s.device(b), batch); err != nil {
				errs++
				last = err
			}
			s.serve.Wait()
		}
		s.appealIfRefused(a, b, last)
		s.logf("push %d->%d: %d batches %s, %d failed", a, b, len(batches), how, errs)
	}
}

// pull runs one anti-entropy pull of node a from node b.
func (s *sim) pull(a, b int) {
	st, err := s.nodes[a].n.mesh.PullFrom(context.Background(), s.device(b))
	s.serve.Wait()
	s.logf("pull %d<-%d: offered %d received %d rejected %d err %v", a, b, st.Offered, st.Received, st.Rejected, err != nil)
	s.appealIfRefused(a, b, err)
}

// appealIfRefused runs node a's appeal to node b when b refused a stream
// of a's because it holds a for revoked, as a device told so does.
func (s *sim) appealIfRefused(a, b int, err error) {
	if !errors.Is(err, transport.ErrRevoked) || s.nodes[b].n.mesh.Authorize(s.device(a)) == nil {
		return
	}
	err = s.nodes[a].n.mesh.Appeal(s.device(b))
	s.serve.Wait()
	s.logf("appeal %d->%d: err %v", a, b, err != nil)
}

// sweep runs every node's sweep of revoked devices' work, as each
// node's sweep loop does once revocations change.
func (s *sim) sweep() {
	for _, sn := range s.nodes {
		if err := sn.n.mesh.Sweep(); err != nil {
			s.tb.Fatalf("seed %d: node %d: sweep: %v", s.seed, sn.i, err)
		}
	}
}

// admitAll makes node 0 the mesh's first device, admitting every other,
// and gives each node the registry, as invites and joins would.
func (s *sim) admitAll() {
	s.revocations = true
	first := s.nodes[0].n
	for _, sn := range s.nodes {
		if _, err := first.registry.AddDevice(sn.n.DeviceID(), fmt.Sprintf("sim%d", sn.i), first.DeviceID()); err != nil {
			s.tb.Fatalf("seed %d: admit node %d: %v", s.seed, sn.i, err)
		}
	}
	var docs []transport.Entry
	first.store.All(storage.KindMesh, func(rec storage.Record) error {
		doc, err := first.store.GetDoc(storage.KindMesh, rec.ID)
		if err != nil {
			s.tb.Fatal(err)
		}
		docs = append(docs, transport.Entry{Kind: byte(storage.KindMesh), ID: rec.ID, Heads: rec.Heads, Doc: doc})
		return nil
	})
	for _, sn := range s.nodes[1:] {
		if err := sn.n.mesh.Apply(first.DeviceID(), docs); err != nil {
			s.tb.Fatalf("seed %d: node %d takes the registry: %v", s.seed, sn.i, err)
		}
	}
	s.logf("node 0 admitted every node")
}

// revocationEvent has a node revoke another, which may be away, or has a
// revoked node that has not heard of it revoke its revoker at once (a
// mutual revocation, settled by seniority). A revoked node goes on
// writing, and passes its work to the nodes that have not heard.
func (s *sim) revocationEvent() {
	a := s.rng.IntN(len(s.nodes))
	b := (a + 1 + s.rng.IntN(len(s.nodes)-1)) % len(s.nodes)
	if s.rng.IntN(3) == 0 && len(s.revoked) > 0 {
		rev := s.revoked[s.rng.IntN(len(s.revoked))]
		a, b = rev.of, rev.by
		if s.nodes[a].n.registry.Revoked(s.device(a)) {
			return // it heard
		}
	}
	targets := map[int]bool{b: true}
	for _, r := range s.revoked {
		targets[r.of] = true
	}
	if len(targets) > len(s.nodes)-2 {
		return // keep two nodes no one revoked
	}
	held := map[*simOp]bool{}
	for _, op := range s.ops {
		if op.node == b && s.holdsWork(s.nodes[a].n, op) {
			held[op] = true
		}
	}
	if _, err := s.nodes[a].n.Revoke(context.Background(), s.device(b)); err != nil {
		s.logf("node %d: revoke %d: %v", a, b, err)
		return
	}
	s.revoked = append(s.revoked, &simRevocation{by: a, of: b, event: s.event, at: s.now, held: held})
	s.logf("node %d: revoke %d", a, b)
}

// holdsWork reports whether node n holds the change op made, as a
// frontier does: for a purge, the purge by op's node itself.
func (s *sim) holdsWork(n *Node, op *simOp) bool {
	if op.kind != "purge" {
		return s.holds(n, op)
	}
	rec, err := n.store.Get(storage.KindPurge, op.id)
	if err != nil {
		return false
	}
	ts, err := crdt.DecodeTombstone(rec.Value)
	return err == nil && slices.ContainsFunc(ts.Purges, func(p crdt.Purge) bool { return p.By == s.device(op.node) })
}

// kicks runs the pulls node a was asked to run soon, as its pull loop does.
func (s *sim) kicks(a int) {
	for _, device := range s.nodes[a].n.mesh.Kicked() {
		if b := s.index(device); b >= 0 {
			s.pull(a, b)
		}
	}
}

// restart stops node a and opens it again from its home: what the mesh
// held in memory (queued pushes, the epoch) is gone, what was committed is
// kept, as after a crash (every acknowledged write is durable before it
// is acknowledged).
func (s *sim) restart(a int, why string) {
	sn := s.nodes[a]
	if err := sn.n.Close(); err != nil {
		s.tb.Fatalf("seed %d: close node %d: %v", s.seed, a, err)
	}
	sn.n = nil
	s.open(sn)
	s.logf("node %d: %s, restarted", a, why)
}

func (s *sim) takeBackup(a int) {
	sn := s.nodes[a]
	sn.n.Close()
	sn.backup = filepath.Join(s.dir, fmt.Sprintf("backup%d", a))
	if err := os.CopyFS(sn.backup, os.DirFS(sn.home)); err != nil {
		s.tb.Fatal(err)
	}
	s.open(sn)
	s.logf("node %d: backup taken", a)
}

// restore puts node a's home back to its backup. What only it held since
// is lost: those writes are no longer expected anywhere.
func (s *sim) restore(a int) {
	sn := s.nodes[a]
	sn.n.Close()
	if err := os.RemoveAll(sn.home); err != nil {
		s.tb.Fatal(err)
	}
	if err := os.CopyFS(sn.home, os.DirFS(sn.backup)); err != nil {
		s.tb.Fatal(err)
	}
	s.open(sn)
	lost := 0
	for _, op := range s.ops {
		if op.lost || op.kind == "ns" {
			continue
		}
		var holders, keepers []int
		for _, other := range s.nodes {
			if s.holds(other.n, op) {
				holders = append(holders, other.i)
			}
			// A tombstone holds this purge only with its author's.
			if op.kind != "purge" && s.holds(other.n, op) || op.kind == "purge" && s.holdsWork(other.n, op) {
				keepers = append(keepers, other.i)
			}
		}
		switch {
		case holders == nil:
			op.lost = true
			lost++
		case !s.holds(sn.n, op):
			op.keptBy = append(op.keptBy, keepers)
			op.away = op.away || op.node == a
		}
	}
	s.logf("node %d: restored from its backup, %d writes lost with it", a, lost)
}

// holds reports whether node n holds the effect of op.
func (s *sim) holds(n *Node, op *simOp) bool {
	switch op.kind {
	case "purge":
		return n.purged(op.id)
	case "link":
		_, err := n.store.Get(storage.KindEdge, op.id)
		return err == nil
	}
	m, ok := simMemory(n, op.id)
	if !ok {
		return false
	}
	switch op.kind {
	case "forget":
		return m.Status == model.StatusArchived
	case "remember", "update":
		return slices.ContainsFunc(m.Revisions, func(r model.Revision) bool { return r.Text == op.text })
	}
	return true
}

func simMemory(n *Node, id string) (model.Memory, bool) {
	rec, err := n.store.Get(storage.KindMemory, id)
	if err != nil {
		return model.Memory{}, false
	}
	var m model.Memory
	if json.Unmarshal(rec.Value, &m) != nil {
		return model.Memory{}, false
	}
	return m, true
}

// heal ends every fault, then syncs as anti-entropy does until nothing
// moves (bounded).
func (s *sim) heal() {
	for i := range s.cut {
		clear(s.cut[i])
	}
	clear(s.lose)
	for _, sn := range s.nodes {
		sn.skew = false
	}
	s.healed = true
	s.logf("heal: every fault ends")
	s.sweep()
	if s.syncUntilQuiet() || s.invariantsHold() {
		return
	}
	s.logf("no convergence: forget every saved position and sync again")
	for _, sn := range s.nodes {
		for _, other := range s.nodes {
			if other != sn {
				sn.n.store.PutLocalDurable("mesh/pos/"+other.n.DeviceID(), nil)
			}
		}
	}
	if s.syncUntilQuiet() && s.invariantsHold() {
		s.failf("converged only once saved positions were forgotten")
	}
}

// syncUntilQuiet runs rounds of pushes and of pulls of every node from
// every other until every digest is equal or a round moves nothing.
func (s *sim) syncUntilQuiet() bool {
	for round := range 12 {
		s.now = s.now.Add(time.Minute)
		moved := 0
		for a := range s.nodes {
			s.push(a)
		}
		for a := range s.nodes {
			for b := range s.nodes {
				if a != b {
					st, err := s.nodes[a].n.mesh.PullFrom(context.Background(), s.device(b))
					s.serve.Wait()
					s.appealIfRefused(a, b, err)
					moved += st.Received
				}
			}
			s.nodes[a].n.mesh.Kicked()
		}
		s.sweep()
		s.logf("sync round %d: %d documents moved", round, moved)
		if s.digestsEqual() {
			return true
		}
		if moved == 0 && round > 0 {
			return false
		}
	}
	return false
}

// digestsEqual reports whether the nodes' anti-entropy digests (of what
// may leave each machine) are equal.
func (s *sim) digestsEqual() bool {
	live := s.live()
	first, err := live[0].n.mesh.Digest()
	if err != nil {
		s.tb.Fatal(err)
	}
	for _, sn := range live[1:] {
		d, err := sn.n.mesh.Digest()
		if err != nil {
			s.tb.Fatal(err)
		}
		if d != first {
			return false
		}
	}
	return true
}

// live returns the nodes no revocation revokes, as the first node that
// does not hold itself revoked sees them (every such node must agree:
// see check).
func (s *sim) live() []*simNode {
	for _, sn := range s.nodes {
		if !sn.n.registry.Revoked(sn.n.DeviceID()) {
			var out []*simNode
			for _, other := range s.nodes {
				if !sn.n.registry.Revoked(other.n.DeviceID()) {
					out = append(out, other)
				}
			}
			return out
		}
	}
	return s.nodes[:1]
}

// edgeToPrivate reports whether every digest bucket in which the nodes
// differ holds an edge to a memory that some node holds in a local-only
// namespace.
func (s *sim) edgeToPrivate() bool {
	private := map[string]bool{}
	for _, sn := range s.nodes {
		sn.n.store.All(storage.KindMemory, func(rec storage.Record) error {
			if m, ok := simMemory(sn.n, rec.ID); ok && sn.n.mesh.LocalOnly(m.Namespace) {
				private[DisplayID(rec.ID)] = true
			}
			return nil
		})
	}
	suspect := map[byte]bool{}
	for _, sn := range s.nodes {
		sn.n.store.All(storage.KindEdge, func(rec storage.Record) error {
			var e model.Edge
			if json.Unmarshal(rec.Value, &e) == nil && (private[e.From] || private[e.To]) {
				suspect[storage.Bucket(storage.KindEdge, rec.ID)] = true
			}
			return nil
		})
	}
	live := s.live()
	first, _ := live[0].n.mesh.Digest()
	for _, sn := range live[1:] {
		d, _ := sn.n.mesh.Digest()
		for b := range d {
			if d[b] != first[b] && !suspect[byte(b)] {
				return false
			}
		}
	}
	return true
}

// stillLocal reports whether op's memory must stay on its machine: written
// in a namespace local-only everywhere, which no node set to sync since.
func (s *sim) stillLocal(op *simOp) bool {
	at, ok := s.setAll[op.ns]
	return op.local && (!ok || at < op.event)
}

// unshared returns the memories that need not be the same everywhere:
// each one in a namespace local-only on node 0 (where each machine keeps
// what it has), with the machine it must stay on when it never left it
// (-1 otherwise).
func (s *sim) unshared() map[string]int {
	out := map[string]int{}
	ns := map[string]string{}
	for _, op := range s.ops {
		if op.kind != "remember" {
			continue
		}
		ns[op.id] = op.ns
		if s.stillLocal(op) {
			out[op.id] = op.node
		}
	}
	m := s.live()[0].n.mesh
	anyLocal := false
	for _, n := range simNamespaces {
		anyLocal = anyLocal || m.LocalOnly(n)
	}
	for id, n := range ns {
		if _, ok := out[id]; !ok && m.LocalOnly(n) {
			out[id] = -1
		}
	}
	if anyLocal {
		// A memory a restore lost for good, or a revoked node's that
		// every node refuses: a node that holds an edge at it cannot tell
		// whether it was private, and keeps the edge to itself while any
		// namespace is local-only.
		standing := s.judge()
		for _, op := range s.ops {
			if op.kind == "remember" && (op.lost || s.beyond(op, standing)) {
				out[op.id] = -1
			}
		}
	}
	return out
}

// invariantsHold reports whether the invariants hold, recording no
// failure.
func (s *sim) invariantsHold() bool {
	n := len(s.failures)
	s.checkInvariants()
	ok := len(s.failures) == n
	s.failures = s.failures[:n]
	return ok
}

// check checks the invariants, then that pushes still flow: a write on
// each live node after healing reaches every live peer by push alone.
func (s *sim) check() {
	for _, sn := range s.nodes {
		var revoked []int
		for _, other := range s.nodes {
			if sn.n.registry.Revoked(other.n.DeviceID()) {
				revoked = append(revoked, other.i)
			}
		}
		s.logf("node %d holds revoked: %v", sn.i, revoked)
	}
	live := s.live()
	if !s.digestsEqual() {
		if s.edgeToPrivate() {
			s.failf("digests differ over edges to memories of a local-only namespace")
		} else {
			s.failf("digests differ after healing")
		}
	}
	for _, sn := range live[1:] {
		for _, other := range s.nodes {
			if sn.n.registry.Revoked(other.n.DeviceID()) != live[0].n.registry.Revoked(other.n.DeviceID()) {
				s.failf("nodes %d and %d disagree on whether node %d is revoked", live[0].i, sn.i, other.i)
			}
		}
		for _, ns := range simNamespaces {
			if sn.n.mesh.LocalOnly(ns) != live[0].n.mesh.LocalOnly(ns) {
				s.failf("nodes %d and %d disagree on namespace %s", live[0].i, sn.i, ns)
			}
		}
	}
	s.checkInvariants()
	s.event++
	for _, sn := range live {
		s.remember(sn.i, s.anyNamespace())
		sn.n.mesh.QueuePushes()
	}
	for _, sa := range live {
		m := sa.n.mesh
		for _, sb := range live {
			for sb != sa {
				batch, ok := m.NextPush(sb.n.DeviceID())
				if !ok {
					break
				}
				m.PushTo(sb.n.DeviceID(), batch)
				s.serve.Wait()
			}
		}
	}
	for _, op := range s.ops[len(s.ops)-len(live):] {
		for _, sn := range live {
			if !live[0].n.mesh.LocalOnly(op.ns) && !s.holds(sn.n, op) {
				s.failf("pushes stopped: write %s of node %d after healing did not reach node %d by push", op.id, op.node, sn.i)
			}
		}
	}
}

// judged is what the live nodes decided of the simulation's revocations:
// those that stand.
type judged map[*simRevocation]bool

// judge returns the revocations that stand, as the first live node sees
// them (check holds that the others agree on who is revoked).
func (s *sim) judge() judged {
	n := s.live()[0].n
	devices, err := n.Devices(context.Background())
	if err != nil {
		s.tb.Fatal(err)
	}
	out := judged{}
	for _, rev := range s.revoked {
		for _, d := range devices {
			if d.Key == s.device(rev.of) && slices.ContainsFunc(d.Revocations, func(r api.Revocation) bool {
				return r.By == s.device(rev.by) && r.At.Equal(rev.at) && r.Stands
			}) {
				out[rev] = true
			}
		}
	}
	return out
}

// beyond reports whether op is work of a revoked node beyond the
// frontier of a revocation of it that stands: made after it, or not held
// by the revoker when it revoked.
func (s *sim) beyond(op *simOp, standing judged) bool {
	for rev := range standing {
		if rev.of == op.node && (op.event > rev.event || !rev.held[op]) {
			return true
		}
	}
	return false
}

// purgedWithin reports whether op is a purge whose node purged the same
// memory within the frontier before: a tombstone keeps one purge per
// device (the first), which cannot tell the two apart.
func (s *sim) purgedWithin(op *simOp, standing judged) bool {
	return op.kind == "purge" && slices.ContainsFunc(s.ops, func(o *simOp) bool {
		return o != op && o.kind == "purge" && o.node == op.node && o.id == op.id && !o.lost && !s.beyond(o, standing)
	})
}

// goneWithRevoked reports whether op went with revoked nodes: after a
// restore erased it, only nodes revoked by a standing revocation held it,
// and no live node holds it now.
func (s *sim) goneWithRevoked(op *simOp, standing judged, live []*simNode) bool {
	revoked := map[int]bool{}
	for rev := range standing {
		revoked[rev.of] = true
	}
	gone := false
	for _, holders := range op.keptBy {
		gone = gone || !slices.ContainsFunc(holders, func(i int) bool { return !revoked[i] })
	}
	return gone && !slices.ContainsFunc(live, func(sn *simNode) bool { return s.holds(sn.n, op) })
}

// refusedWork returns the memories, edges and namespaces whose documents
// may hold work of a revoked node beyond a frontier: every change made on
// them may be refused with it (what depends on a refused change goes
// too). A revoked node's forgets and links count whatever the model says
// of them, since holds cannot tell its change from another's of the same
// effect. So does a memory such a node purged: a purge erases at once,
// and what only the nodes that took it before the revocation held of the
// memory is gone (it comes back from the others as they hold it).
func (s *sim) refusedWork(standing judged) (docs map[string]bool, namespaces map[string]bool) {
	docs, namespaces = map[string]bool{}, map[string]bool{}
	revoked := map[int]bool{}
	for rev := range standing {
		revoked[rev.of] = true
	}
	for _, op := range s.ops {
		// A purge erased what it reached at once, even one a restore
		// lost since.
		if op.lost && op.kind != "purge" || !revoked[op.node] {
			continue
		}
		switch {
		case op.kind == "ns":
			namespaces[op.ns] = true
		case op.kind == "forget" || op.kind == "link" || s.beyond(op, standing):
			docs[op.id] = true
		}
	}
	return docs, namespaces
}

func (s *sim) checkInvariants() {
	live := s.live()
	local := s.unshared()
	standing := s.judge()
	refused, refusedNS := s.refusedWork(standing)
	purged := map[string]bool{}
	for _, op := range s.ops {
		if op.kind == "purge" && !op.lost && !s.beyond(op, standing) && !s.goneWithRevoked(op, standing, live) {
			purged[op.id] = true
		}
	}
	for _, op := range s.ops {
		if op.lost || op.kind == "ns" {
			continue
		}
		beyond := s.beyond(op, standing)
		for _, sn := range live {
			b := sn.i
			author, isLocal := local[op.id]
			switch {
			case beyond:
				if s.holdsWork(sn.n, op) && op.kind != "forget" && op.kind != "link" && !s.purgedWithin(op, standing) {
					s.failf("%s %s of node %d (event %d), revoked, is on node %d", op.kind, op.id, op.node, op.event, b)
				}
			case purged[op.id] || purged[op.from] || purged[op.to]:
				if op.kind == "purge" && !sn.n.purged(op.id) {
					s.failf("purge of %s (node %d, event %d) missing on node %d", op.id, op.node, op.event, b)
				}
				if op.kind == "link" {
					if _, err := sn.n.store.Get(storage.KindEdge, op.id); err == nil {
						s.failf("edge %s to a purged memory resurrected on node %d", op.id, b)
					}
				} else if _, ok := simMemory(sn.n, op.id); ok {
					s.failf("purged memory %s resurrected on node %d", op.id, b)
				}
			case refused[op.id] || refused[op.from] || refused[op.to] || refusedNS[op.ns]:
				// It may have been built on a revoked node's refused work.
			case isLocal && author >= 0 && author != b:
				if _, ok := simMemory(sn.n, op.id); ok {
					s.failf("memory %s of a local-only namespace of node %d is on node %d", op.id, author, b)
				}
			case isLocal && author < 0:
				// Each machine keeps what it has of a local-only namespace.
			case (hasKey(local, op.from) || hasKey(local, op.to)) && (b != op.node || op.away):
				// An edge to a memory that stays on its machine stays
				// too: where it is, and where it is not, such as on its
				// author when a restore erased it there after a peer
				// received it.
			case s.goneWithRevoked(op, standing, live):
				// Only revoked nodes held it after a restore: nobody
				// takes it from them.
			case !s.holds(sn.n, op):
				s.failf("acknowledged %s %s (node %d, event %d) missing on node %d", op.kind, op.id, op.node, op.event, b)
			}
		}
	}
	first := s.export(live[0].i, local)
	for _, sn := range live[1:] {
		if e := s.export(sn.i, local); e != first {
			s.failf("exports of nodes %d and %d differ:\n%s", live[0].i, sn.i, firstDiff(first, e))
			break
		}
	}
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

// export is node b's export without its header, the memories that must
// stay on their machine, and edges to them.
func (s *sim) export(b int, local map[string]int) string {
	var buf bytes.Buffer
	if _, err := s.nodes[b].n.Export(context.Background(), &buf); err != nil {
		s.tb.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")[1:]
	out := lines[:0]
	for _, line := range lines {
		var l struct {
			ID   string `json:"id"`
			From string `json:"from"`
			To   string `json:"to"`
		}
		json.Unmarshal([]byte(line), &l)
		if hasKey(local, strings.TrimPrefix(l.ID, IDPrefix)) || hasKey(local, strings.TrimPrefix(l.From, IDPrefix)) || hasKey(local, strings.TrimPrefix(l.To, IDPrefix)) {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(la), len(lb)) {
		x, y := "", ""
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return "  " + x + "\n  " + y
		}
	}
	return ""
}

// TestSimRestoreThenEdit replays what seed 1032 found: a node restored
// from a backup edits a memory again after peers received its edits made
// since the backup. Under the same Automerge actor the new edit reused
// their sequence numbers; every merge of the memory then failed ("duplicate
// seq"), and the copies differed for good.
func TestSimRestoreThenEdit(t *testing.T) {
	t.Parallel()
	s := newSim(t, 1032, rand.New(rand.NewPCG(1032, 0)), 2)
	defer s.close()
	s.healed = true // pushes arrive, once each, in order
	s.remember(0, s.anyNamespace())
	id := s.ops[0].id
	s.push(0)
	s.takeBackup(0)
	s.update(0, id)
	s.push(0)
	s.restore(0)
	s.update(0, id)
	s.push(0)
	s.heal()
	s.check()
	for _, f := range s.failures {
		t.Error(f)
	}
	if t.Failed() {
		t.Logf("trace:\n  %s", strings.Join(s.trace, "\n  "))
	}
}

// TestSimRestoreLosesLocalEdge replays what seed 741 found: a node links
// two memories, a peer receives the link, the node is restored from a
// backup taken before it, and then the memories' namespace turns
// local-only. The peer now holds the link's only copy and may never send
// it (an edge at a memory of a local-only namespace never leaves its
// machine), so its author does not get it back: the policy holds, and the
// simulation must not expect the link on its author.
func TestSimRestoreLosesLocalEdge(t *testing.T) {
	t.Parallel()
	s := newSim(t, 741, rand.New(rand.NewPCG(741, 0)), 2)
	defer s.close()
	s.healed = true // pushes arrive, once each, in order
	s.takeBackup(1)
	s.remember(0, "team")
	s.remember(0, "team")
	s.push(0)
	s.link(1, s.ops[0].id, s.ops[1].id)
	s.push(1)
	if len(s.ops) != 3 || !s.holds(s.nodes[0].n, s.ops[2]) {
		t.Fatalf("the link did not reach node 0:\n  %s", strings.Join(s.trace, "\n  "))
	}
	s.restore(1)
	s.setSync(0, "team", model.SyncLocal)
	s.heal()
	s.check()
	if s.holds(s.nodes[1].n, s.ops[2]) {
		t.Error("a link at memories of a local-only namespace came back to its author")
	}
	for _, f := range s.failures {
		t.Error(f)
	}
	if t.Failed() {
		t.Logf("trace:\n  %s", strings.Join(s.trace, "\n  "))
	}
}
