package bench

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/faultnet"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/node"
	"github.com/memmesh/memmesh/transport"
)

// maxNodes bounds the nodes of one mesh benchmark: each takes an address
// of its own in 127.0.0.0/8.
const maxNodes = 64

// propagationLimit bounds the wait for one capture on another node.
const propagationLimit = 30 * time.Second

// PullFigures describe one anti-entropy pull.
type PullFigures struct {
	Seconds    float64 `json:"s"`
	Bytes      int64   `json:"bytes"`
	RoundTrips int     `json:"round_trips"`
	Documents  int     `json:"documents"` // received and applied
}

func pullFigures(st transport.SyncStats) PullFigures {
	return PullFigures{Seconds: st.Duration.Seconds(), Bytes: st.Bytes, RoundTrips: st.RoundTrips, Documents: st.Received}
}

func (p PullFigures) String() string {
	return fmt.Sprintf("%s s, %s MB, %d round trips, %d documents", num(p.Seconds), num(float64(p.Bytes)/1e6), p.RoundTrips, p.Documents)
}

// meshNode opens and starts a node on home whose mesh listens on
// 127.0.0.host (an ephemeral port) with the daemon's default timings;
// its packets go through fn when fn is set.
func meshNode(ctx context.Context, home string, host int, fn *faultnet.Net, log *slog.Logger) (*node.Node, error) {
	mc := mesh.Config{Listen: fmt.Sprintf("127.0.0.%d:0", host), Name: fmt.Sprintf("bench%d", host)}
	if fn != nil {
		mc.WrapConn = fn.Wrap
	}
	return startNode(ctx, node.Config{Home: home, Logger: nodeLogger(log), Mesh: &mc})
}

// closeAll closes nodes.
func closeAll(nodes []*node.Node) {
	for _, n := range nodes {
		n.Close()
	}
}

// join brings newcomer into member's mesh with an invite.
func join(ctx context.Context, member, newcomer *node.Node) error {
	inv, err := member.Invite(ctx, time.Hour)
	if err != nil {
		return fmt.Errorf("bench: invite: %w", err)
	}
	if _, err := newcomer.Join(ctx, inv.Token); err != nil {
		return fmt.Errorf("bench: join: %w", err)
	}
	return nil
}

// alivePeers counts the peers n sees alive.
func alivePeers(ctx context.Context, n *node.Node) (int, error) { return peersIn(ctx, n, "alive") }

// peersIn counts the peers n sees in state.
func peersIn(ctx context.Context, n *node.Node, state string) (int, error) {
	peers, err := n.Peers(ctx)
	if err != nil {
		return 0, err
	}
	k := 0
	for _, p := range peers {
		if p.State == state {
			k++
		}
	}
	return k, nil
}

// converged reports whether the nodes hold the same documents with the
// same heads.
func converged(nodes ...*node.Node) (bool, error) {
	first, err := nodes[0].Digest()
	if err != nil {
		return false, err
	}
	for _, n := range nodes[1:] {
		d, err := n.Digest()
		if err != nil || d != first {
			return false, err
		}
	}
	return true, nil
}

// pullRecordLimit bounds the wait for a pull's figures once its documents
// are stored: the pull records them as it returns.
const pullRecordLimit = 30 * time.Second

// nextPull returns the figures of the first pull of n from peer that
// brought documents after the one whose figures are prev.
func nextPull(ctx context.Context, n, peer *node.Node, prev transport.SyncStats) (transport.SyncStats, error) {
	var st transport.SyncStats
	err := waitFor(ctx, "a pull that brought documents", pullRecordLimit, func() (bool, error) {
		st = n.LastPull(peer.DeviceID())
		return st != prev, nil
	})
	return st, err
}

// meshAddr is the address n's mesh listens on.
func meshAddr(ctx context.Context, n *node.Node) (string, error) {
	st, err := n.MeshStatus(ctx)
	if err != nil {
		return "", fmt.Errorf("bench: mesh status: %w", err)
	}
	return st.Listen, nil
}

// SyncOptions configures Sync.
type SyncOptions struct {
	// Nodes is how many nodes capture and search in the propagation part,
	// and how many there are once a fresh node joined the others.
	Nodes int
	// Memories is how many corpus memories the members a fresh node joins
	// hold.
	Memories int
	// Samples is how many captures are timed until searchable on another
	// node.
	Samples int
	Common
}

// Validate checks the options.
func (o SyncOptions) Validate() error {
	err := atLeast("nodes", o.Nodes, 2)
	if o.Nodes > maxNodes {
		err = fmt.Errorf("--nodes %d: give at most %d", o.Nodes, maxNodes)
	}
	return firstErr(err, atLeast("memories", o.Memories, 1), atLeast("samples", o.Samples, 1))
}

// SyncReport holds the figures of replication between nodes.
type SyncReport struct {
	Nodes   int `json:"nodes"`
	Samples int `json:"samples"`
	// Propagation is from a capture on one node until a search on
	// another finds it.
	Propagation Summary `json:"propagation"`
	Memories    int     `json:"memories"`
	// InitialStored is the seconds from a fresh node's join until it
	// stores every document of the member; InitialSearchable until its
	// search index holds them too.
	InitialStored     float64 `json:"initial_stored_s"`
	InitialSearchable float64 `json:"initial_searchable_s"`
	// InitialCPU is the CPU time this process used from the join until
	// all was searchable: every node's work and the benchmark's own
	// checks. On a shared machine it varies less than the times do;
	// divided by the cores it is the least the catch-up can take.
	InitialCPU  float64     `json:"initial_cpu_s"`
	InitialPull PullFigures `json:"initial_pull"`
	// InitialBytes is the frame bytes of every pull of the fresh node,
	// from every member, until it had completed one from each.
	InitialBytes int64 `json:"initial_bytes"`
}

// Rows implements Report.
func (r SyncReport) Rows() []Row {
	return []Row{
		{"nodes", fmt.Sprint(r.Nodes)},
		{"captures timed", fmt.Sprint(r.Samples)},
		{"capture until searchable on a peer", r.Propagation.String()},
		{"memories on each member a fresh node joins", fmt.Sprintf("%d (members: %d)", r.Memories, r.Nodes-1)},
		{"initial sync: join until stored", fmt.Sprintf("%s s", num(r.InitialStored))},
		{"initial sync: join until all searchable", fmt.Sprintf("%s s", num(r.InitialSearchable))},
		{"initial sync: CPU time used meanwhile", fmt.Sprintf("%s s", num(r.InitialCPU))},
		{"initial sync: the pull that brought the most", r.InitialPull.String()},
		{"initial sync: bytes of every pull from every member", fmt.Sprintf("%s MB", num(float64(r.InitialBytes)/1e6))},
	}
}

// Sync runs real nodes in this process, each with its own home and QUIC
// on its own loopback address. First, on a mesh of opts.Nodes empty
// nodes, it times captures on one node until a search on the next finds
// them. Then a fresh node joins a mesh of opts.Nodes-1 members holding
// the same opts.Memories corpus memories and catches up.
func Sync(ctx context.Context, opts SyncOptions) (SyncReport, error) {
	if err := opts.Validate(); err != nil {
		return SyncReport{}, err
	}
	log := logger(opts.Log)
	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return SyncReport{}, err
	}
	defer cleanup()

	r := SyncReport{Nodes: opts.Nodes, Samples: opts.Samples, Memories: opts.Memories}
	lat, err := propagation(ctx, filepath.Join(dir, "propagation"), opts.Nodes, opts.Samples, log)
	if err != nil {
		return SyncReport{}, err
	}
	r.Propagation = lat.Summary()
	log.Info("propagation", "samples", opts.Samples, "latency", r.Propagation.String())

	p, err := newPair(ctx, filepath.Join(dir, "initial"), opts.Memories, opts.Nodes-1, nil, log)
	if err != nil {
		return SyncReport{}, err
	}
	defer p.close()
	r.InitialStored, r.InitialSearchable, r.InitialCPU = p.stored.Seconds(), p.searchable.Seconds(), p.cpu.Seconds()
	r.InitialPull = pullFigures(p.initial)
	r.InitialBytes = p.pulledBytes
	return r, nil
}

// propagation starts k nodes, joins them and times samples captures, each
// on one node until a search on the next finds it.
func propagation(ctx context.Context, dir string, k, samples int, log *slog.Logger) (Latencies, error) {
	var nodes []*node.Node
	defer func() { closeAll(nodes) }()
	for host := 1; host <= k; host++ {
		n, err := meshNode(ctx, filepath.Join(dir, fmt.Sprintf("node%d", host)), host, nil, log)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
		if host > 1 {
			if err := join(ctx, nodes[0], n); err != nil {
				return nil, err
			}
		}
	}
	err := waitFor(ctx, "every node sees every other alive", waitLimit, func() (bool, error) {
		for _, n := range nodes {
			if alive, err := alivePeers(ctx, n); err != nil || alive != k-1 {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	log.Info("mesh up", "nodes", k)

	lat := make(Latencies, 0, samples)
	for i := range samples {
		src, dst := nodes[i%k], nodes[(i+1)%k]
		word := fmt.Sprintf("propagationmarker%d", i)
		start := time.Now()
		res, err := remember(ctx, src, api.RememberRequest{Namespace: "bench", Content: "Benchmark note " + word + " about retry budgets"})
		if err != nil {
			return nil, fmt.Errorf("bench: capture: %w", err)
		}
		for {
			hits, err := dst.Search(ctx, api.SearchRequest{Query: word, Namespace: "bench", Limit: 1})
			if err != nil {
				return nil, fmt.Errorf("bench: search: %w", err)
			}
			if len(hits.Results) == 1 && hits.Results[0].ID == res.ID {
				break
			}
			if time.Since(start) > propagationLimit {
				return nil, fmt.Errorf("bench: capture %d not searchable on a peer after %v", i, propagationLimit)
			}
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

// pair is a member holding corpus memories, the other members that
// caught up from it, and a fresh node that joined them and caught up.
type pair struct {
	member, fresh *node.Node
	others        []*node.Node
	stored        time.Duration       // from the join until the fresh node stored everything
	searchable    time.Duration       // until it was all searchable there
	cpu           time.Duration       // CPU time of the process meanwhile
	initial       transport.SyncStats // the fresh node's pull that brought the most documents
	pulledBytes   int64               // every pull of the fresh node until it pulled from each member
}

// newPair fills a home with memories, starts a member on it (127.0.0.1),
// members-1 more that join it and catch up, and a fresh node, their
// packets through fn when set; it joins the fresh node to the first
// member and waits until it has caught up and pulled from every member.
func newPair(ctx context.Context, dir string, memories, members int, fn *faultnet.Net, log *slog.Logger) (*pair, error) {
	home := filepath.Join(dir, "member")
	if err := populate(ctx, home, memories, log); err != nil {
		return nil, err
	}
	p := &pair{}
	var err error
	if p.member, err = meshNode(ctx, home, 1, fn, log); err != nil {
		return nil, err
	}
	for host := 2; host <= members; host++ {
		n, err := meshNode(ctx, filepath.Join(dir, fmt.Sprintf("member%d", host)), host, fn, log)
		if err == nil {
			p.others = append(p.others, n)
			err = join(ctx, p.member, n)
		}
		if err != nil {
			p.close()
			return nil, err
		}
	}
	all := append([]*node.Node{p.member}, p.others...)
	if err := waitFor(ctx, "the members' sync", waitLimit, func() (bool, error) { return converged(all...) }); err != nil {
		p.close()
		return nil, err
	}
	if p.fresh, err = meshNode(ctx, filepath.Join(dir, "fresh"), members+1, fn, log); err != nil {
		p.close()
		return nil, err
	}
	log.Info("a fresh node joins", "member_memories", memories, "members", members)
	if err := inPhase(ctx, "catchup", func(ctx context.Context) error { return p.catchUp(ctx, all) }); err != nil {
		p.close()
		return nil, err
	}
	if err := p.measure(ctx, all); err != nil {
		p.close()
		return nil, err
	}
	log.Info("caught up", "stored_after", p.stored.Round(time.Millisecond), "searchable_after", p.searchable.Round(time.Millisecond))
	return p, nil
}

// catchUp joins the fresh node to the member and waits until it holds
// what the members hold, and until all of it is searchable.
func (p *pair) catchUp(ctx context.Context, members []*node.Node) error {
	start, cpu := time.Now(), cpuTime()
	if err := join(ctx, p.member, p.fresh); err != nil {
		return err
	}
	if err := waitFor(ctx, "initial sync", waitLimit, func() (bool, error) { return converged(append(members, p.fresh)...) }); err != nil {
		return err
	}
	p.stored = time.Since(start)
	if err := searchable(ctx, p.fresh); err != nil {
		return err
	}
	p.searchable, p.cpu = time.Since(start), cpuTime()-cpu
	return nil
}

// measure waits until the fresh node has completed a pull from every
// member, then takes its pulls' figures.
func (p *pair) measure(ctx context.Context, members []*node.Node) error {
	err := waitFor(ctx, "a pull from every member", pullRecordLimit, func() (bool, error) {
		peers, err := p.fresh.Peers(ctx)
		if err != nil {
			return false, err
		}
		synced := 0
		for _, peer := range peers {
			if !peer.LastSync.IsZero() {
				synced++
			}
		}
		return synced >= len(members), nil
	})
	if err != nil {
		return err
	}
	p.pulledBytes = p.fresh.PulledBytes()
	for _, m := range members {
		if st := p.fresh.LastPull(m.DeviceID()); st.Received >= p.initial.Received {
			p.initial = st
		}
	}
	return nil
}

func (p *pair) close() {
	for _, n := range append([]*node.Node{p.fresh, p.member}, p.others...) {
		if n != nil {
			n.Close()
		}
	}
}

// ResyncOptions configures Resync.
type ResyncOptions struct {
	// Changes is how many memories change on one side of the partition.
	Changes int
	// Memories is how many corpus memories both nodes hold.
	Memories int
	Common
}

// Validate checks the options.
func (o ResyncOptions) Validate() error {
	err := firstErr(atLeast("changes", o.Changes, 1), atLeast("memories", o.Memories, 1))
	if err == nil && o.Changes > o.Memories {
		err = fmt.Errorf("--changes %d: give at most --memories (%d)", o.Changes, o.Memories)
	}
	return err
}

// ResyncReport holds the figures of two nodes meeting again after a
// partition.
type ResyncReport struct {
	Memories int `json:"memories"`
	Changes  int `json:"changes"`
	// DeadDetect is the seconds from the partition until each side sees
	// the other dead.
	DeadDetect float64 `json:"dead_detect_s"`
	// Remerge is the seconds from the heal until both hold the same
	// documents with the same heads.
	Remerge float64     `json:"remerge_s"`
	Pull    PullFigures `json:"pull"`
}

// Rows implements Report.
func (r ResyncReport) Rows() []Row {
	return []Row{
		{"memories on both nodes", fmt.Sprint(r.Memories)},
		{"changed during the partition", fmt.Sprint(r.Changes)},
		{"partition until the peer is dead on both sides", fmt.Sprintf("%s s", num(r.DeadDetect))},
		{"heal until identical on both sides", fmt.Sprintf("%s s", num(r.Remerge))},
		{"resync pull", r.Pull.String()},
	}
}

// Resync starts two nodes holding the same corpus memories, partitions
// them until each sees the other dead, changes opts.Changes memories on
// one side, heals the partition and measures the pull that brings the
// other side up to date.
func Resync(ctx context.Context, opts ResyncOptions) (ResyncReport, error) {
	if err := opts.Validate(); err != nil {
		return ResyncReport{}, err
	}
	log := logger(opts.Log)
	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return ResyncReport{}, err
	}
	defer cleanup()

	fn := faultnet.New(1)
	p, err := newPair(ctx, dir, opts.Memories, 1, fn, log)
	if err != nil {
		return ResyncReport{}, err
	}
	defer p.close()
	a, b := p.member, p.fresh
	addrA, err := meshAddr(ctx, a)
	if err != nil {
		return ResyncReport{}, err
	}
	addrB, err := meshAddr(ctx, b)
	if err != nil {
		return ResyncReport{}, err
	}

	r := ResyncReport{Memories: opts.Memories, Changes: opts.Changes}
	fn.Partition([]string{addrA}, []string{addrB})
	cut := time.Now()
	// Dead, not only suspect: pushes to a suspect peer are retried until
	// they get through, and the changes would then come back by push.
	err = waitFor(ctx, "each side sees the other dead", waitLimit, func() (bool, error) {
		for _, n := range []*node.Node{a, b} {
			if dead, err := peersIn(ctx, n, "dead"); err != nil || dead != 1 {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return ResyncReport{}, err
	}
	r.DeadDetect = time.Since(cut).Seconds()
	log.Info("partitioned", "dead_after", time.Since(cut).Round(time.Millisecond))

	if err := change(ctx, a, opts.Changes); err != nil {
		return ResyncReport{}, err
	}
	log.Info("changed during the partition", "memories", opts.Changes)
	healed := time.Now()
	fn.Heal()
	if err := waitFor(ctx, "re-merge after the partition", waitLimit, func() (bool, error) { return converged(a, b) }); err != nil {
		return ResyncReport{}, err
	}
	r.Remerge = time.Since(healed).Seconds()
	st, err := nextPull(ctx, b, a, p.initial)
	if err != nil {
		return ResyncReport{}, err
	}
	r.Pull = pullFigures(st)
	log.Info("re-merged", "after", time.Since(healed).Round(time.Millisecond), "pull", r.Pull.String())
	return r, nil
}

// listPage is the most memories one List returns.
const listPage = 1000

// change revises the content of k memories of n, most recently updated
// first.
func change(ctx context.Context, n *node.Node, k int) error {
	var todo []api.Memory
	seen := make(map[string]bool)
	var until time.Time
	for len(todo) < k {
		// One more than needed: the page may start with the last memory
		// of the one before.
		page, err := n.List(ctx, api.ListRequest{Limit: min(listPage, k-len(todo)+1), Until: until})
		if err != nil {
			return fmt.Errorf("bench: list: %w", err)
		}
		added := 0
		for _, m := range page {
			if !seen[m.ID] && len(todo) < k {
				seen[m.ID] = true
				todo = append(todo, m)
				added++
			}
			until = m.Provenance.UpdatedAt
		}
		if added == 0 {
			return fmt.Errorf("bench: only %d memories to change, %d asked for", len(todo), k)
		}
	}
	for i, m := range todo {
		text := fmt.Sprintf("%s (revised during the partition, %d)", m.Content, i)
		if _, err := n.Update(ctx, m.ID, api.UpdateRequest{Content: &text}); err != nil {
			return fmt.Errorf("bench: update: %w", err)
		}
	}
	return nil
}
