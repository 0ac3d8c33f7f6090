package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// The graph benchmarks run on 100,000 memories and 300,000 edges:
//
//	go test -run '^$' -bench 'Traverse|Brief|Lifecycle' -benchtime 200x -timeout 30m ./node
const (
	graphMemories = 100_000
	graphEdges    = 300_000
)

// graphRels are the relations of the benchmark's edges, with how many of
// every 200 edges use each: mostly loose links, a few supersessions and
// contradictions, as in a store that agents and people link over time.
var graphRels = []struct {
	rel   string
	share int
}{{"related_to", 120}, {"depends_on", 30}, {"builds_on", 25}, {"touches", 18}, {"supersedes", 5}, {"contradicts", 2}}

var graphPopulated struct {
	once sync.Once
	home string
	ids  []string // full memory ids
	nss  []string // namespaces
}

// graphHome returns a home holding graphMemories corpus memories and
// graphEdges edges among them (and to files), made once per run.
func graphHome(b *testing.B) (home string, ids, namespaces []string) {
	g := &graphPopulated
	g.once.Do(func() {
		home, err := os.MkdirTemp("", "memmesh-bench-graph-")
		if err != nil {
			b.Fatal(err)
		}
		n, err := New(Config{Home: home})
		if err != nil {
			b.Fatal(err)
		}
		defer n.Close()
		n.Start(context.Background())
		if _, err := n.Import(context.Background(), bytes.NewReader(importFile(b, 5, graphMemories))); err != nil {
			b.Fatal(err)
		}
		seen := map[string]bool{}
		err = n.store.All(storage.KindMemory, func(rec storage.Record) error {
			var m model.Memory
			if err := json.Unmarshal(rec.Value, &m); err != nil {
				return err
			}
			g.ids = append(g.ids, m.ID)
			if !seen[m.Namespace] {
				seen[m.Namespace] = true
				g.nss = append(g.nss, m.Namespace)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		linkRandomly(b, n, g.ids, graphEdges)
		b.Logf("graph home: %d memories, %d edges made in %v", len(g.ids), graphEdges, time.Since(start))
		if _, err := n.Search(context.Background(), api.SearchRequest{Query: "warm"}); err != nil {
			b.Fatal(err)
		}
		g.home = home
	})
	if g.home == "" {
		b.Fatal("the graph home could not be made")
	}
	return g.home, g.ids, g.nss
}

// linkRandomly commits count edges between random memories of ids (and
// from memories to files for touches), in batches, on every core.
func linkRandomly(b *testing.B, n *Node, ids []string, count int) {
	const batch = 1000
	var rels []string
	for _, r := range graphRels {
		for range r.share {
			rels = append(rels, r.rel)
		}
	}
	now := time.Now().UTC()
	var wg sync.WaitGroup
	errs := make(chan error, count/batch)
	for w := range count / batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			recs := make([]storage.Record, 0, batch)
			for range batch {
				rel := rels[rng.IntN(len(rels))]
				from := DisplayID(ids[rng.IntN(len(ids))])
				to := DisplayID(ids[rng.IntN(len(ids))])
				if rel == "touches" {
					to = fmt.Sprintf("file:src/pkg%d/file%d.go", rng.IntN(500), rng.IntN(20))
				}
				e := model.Edge{ID: crdt.EdgeID(from, rel, to), From: from, Rel: rel, To: to, Strength: 1, Origin: "manual", CreatedAt: now, UpdatedAt: now}
				rec, _, err := newEdgeRecord(n.actor, &e)
				if err != nil {
					errs <- err
					return
				}
				recs = append(recs, rec)
			}
			if _, err := n.store.Commit(recs...); err != nil {
				errs <- err
			}
		}()
		if w%4 == 3 {
			wg.Wait() // a few batches at a time: bounded memory
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// graphNode opens the graph home and returns it with random start
// memories (display ids) from a fixed seed.
func graphNode(b *testing.B) (*Node, []string, []string) {
	home, ids, nss := graphHome(b)
	n := testNode(b, home)
	// The brief's index is built once at open, before the first brief.
	if _, err := n.Context(context.Background(), api.ContextRequest{Namespace: nss[0]}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 13))
	starts := make([]string, 256)
	for i := range starts {
		starts[i] = DisplayID(ids[rng.IntN(len(ids))])
	}
	return n, starts, nss
}

func BenchmarkTraverse(b *testing.B) {
	n, starts, _ := graphNode(b)
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	reached := 0
	b.ResetTimer()
	for i := range b.N {
		begin := time.Now()
		res, err := n.Traverse(ctx, api.TraverseRequest{Start: starts[i%len(starts)], Depth: 3, Direction: api.Both})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(begin))
		reached += len(res.Nodes)
	}
	b.StopTimer()
	lat.report(b)
	b.ReportMetric(float64(reached)/float64(b.N), "nodes/op")
}

func BenchmarkBrief(b *testing.B) {
	n, _, nss := graphNode(b)
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	tokens := 0
	b.ResetTimer()
	for i := range b.N {
		begin := time.Now()
		brief, err := n.Context(ctx, api.ContextRequest{Namespace: nss[i%len(nss)]})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(begin))
		tokens += brief.Tokens
	}
	b.StopTimer()
	lat.report(b)
	b.ReportMetric(float64(tokens)/float64(b.N), "tokens/op")
}

// BenchmarkBriefAfterChange measures a brief that follows a change (a new
// link), which makes it find contradictions and cycles again. The link is
// outside the timing.
func BenchmarkBriefAfterChange(b *testing.B) {
	n, starts, nss := graphNode(b)
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		from, to := starts[i%len(starts)], starts[(i+1)%len(starts)]
		if _, err := n.Link(ctx, api.LinkRequest{From: from, Rel: "related_to", To: to}); err != nil && from != to {
			b.Fatal(err)
		}
		b.StartTimer()
		begin := time.Now()
		if _, err := n.Context(ctx, api.ContextRequest{Namespace: nss[i%len(nss)]}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(begin))
	}
	b.StopTimer()
	lat.report(b)
}

func BenchmarkLifecycle(b *testing.B) {
	n, _, _ := graphNode(b)
	ctx := context.Background()
	var r api.LifecycleReport
	b.ResetTimer()
	for range b.N {
		var err error
		if r, err = n.RunLifecycle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(r.Live), "live")
	b.ReportMetric(float64(r.Stale), "stale")
}

// purgeNext picks the memories BenchmarkPurge erases, across its runs.
var purgeNext int

// BenchmarkPurge erases one memory of the graph home per operation: the
// commit, the rewrite of the search index, and the compactions and
// manifest rewrites of the store, until the files no longer hold it.
// (Each purge removes a memory and its edges from the shared home; a few
// of 100,000 change nothing the other benchmarks measure.)
func BenchmarkPurge(b *testing.B) {
	n, _, _ := graphNode(b)
	_, ids, _ := graphHome(b)
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	edges := 0
	b.ResetTimer()
	for range b.N {
		// A memory no earlier run of the benchmark purged.
		purgeNext += 7919
		begin := time.Now()
		p, err := n.Purge(ctx, DisplayID(ids[purgeNext%len(ids)]))
		if err != nil || p.Already {
			b.Fatal(p, err)
		}
		lat = append(lat, time.Since(begin))
		edges += p.Edges
	}
	b.StopTimer()
	lat.report(b)
	b.ReportMetric(float64(edges)/float64(b.N), "edges/op")
}
