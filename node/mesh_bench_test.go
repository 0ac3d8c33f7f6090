package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/faultnet"
	"github.com/memmesh/memmesh/transport"
)

// The mesh benchmarks run real nodes (Pebble, bleve, QUIC on loopback)
// with the default mesh timings. Run them with
//
//	go test -run '^$' -bench 'Mesh' -benchtime 1x ./node
//	go test -run '^$' -bench 'MeshPropagation' -benchtime 300x ./node

// defaultTimings starts a node with the daemon's default mesh timings.
func defaultTimings(b *testing.B, home string, host int, fn *faultnet.Net) *Node {
	return meshNodeWith(b, home, host, fn, MeshConfig{})
}

// BenchmarkMeshPropagation: a capture on one node of three until a search
// on another finds it (push, durable apply, indexing).
func BenchmarkMeshPropagation(b *testing.B) {
	nodes := joinAll(b, defaultTimings(b, "", 1, nil), 3, func(host int) *Node { return defaultTimings(b, "", host, nil) })
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		src, dst := nodes[i%3], nodes[(i+1)%3]
		word := fmt.Sprintf("propagationmarker%d", i)
		start := time.Now()
		res, err := src.Remember(ctx, RememberRequest{Namespace: "bench", Content: "Benchmark note " + word + " about retry budgets"})
		if err != nil {
			b.Fatal(err)
		}
		for {
			hits, err := dst.Search(ctx, SearchRequest{Query: word, Namespace: "bench", Limit: 1})
			if err != nil {
				b.Fatal(err)
			}
			if len(hits.Results) == 1 && hits.Results[0].ID == res.ID {
				break
			}
			if time.Since(start) > 30*time.Second {
				b.Fatalf("capture %d not searchable on the peer after 30s", i)
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkMeshSync: a fresh node joins a member holding N memories and
// catches up (until its search index holds everything); then the two are
// partitioned until membership declares the other dead, 1,000 memories
// change on the member, the partition heals, and the node re-merges.
func BenchmarkMeshSync(b *testing.B) {
	for _, size := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("memories=%d", size), func(b *testing.B) {
			home := populatedHome(b, size)
			for range b.N {
				meshSyncOnce(b, home)
			}
		})
	}
}

func meshSyncOnce(b *testing.B, home string) {
	ctx := context.Background()
	fn := faultnet.New(1)
	a := defaultTimings(b, home, 1, fn)
	fresh := defaultTimings(b, "", 2, fn)

	start := time.Now()
	join(b, a, fresh)
	waitUntil(b, "initial sync", func() bool { return converged([]*Node{a, fresh}) })
	b.ReportMetric(time.Since(start).Seconds(), "initial-stored-s")
	if _, err := fresh.Search(ctx, SearchRequest{Query: "postgres"}); err != nil { // waits for the index
		b.Fatal(err)
	}
	initial := time.Since(start)
	st := pullStats(fresh, a)
	b.ReportMetric(initial.Seconds(), "initial-s")
	b.ReportMetric(float64(st.Bytes)/1e6, "initial-MB")
	b.ReportMetric(float64(st.RoundTrips), "initial-roundtrips")

	// Partition until each side sees the other dead.
	fn.Partition([]string{addr(a)}, []string{addr(fresh)})
	cut := time.Now()
	waitUntil(b, "dead peer detected", func() bool { return alivePeers(a) == 0 && alivePeers(fresh) == 0 })
	b.ReportMetric(time.Since(cut).Seconds(), "dead-detect-s")

	list, err := a.List(ctx, ListRequest{Limit: 1000})
	if err != nil || len(list) < 1000 {
		b.Fatalf("list: %d %v", len(list), err)
	}
	for i, m := range list {
		text := fmt.Sprintf("%s (revised during the partition, %d)", m.Content, i)
		if _, err := a.Update(ctx, m.ID, UpdateRequest{Content: &text}); err != nil {
			b.Fatal(err)
		}
	}
	healed := time.Now()
	fn.Heal()
	waitUntil(b, "re-merge after the partition", func() bool { return converged([]*Node{a, fresh}) })
	b.ReportMetric(time.Since(healed).Seconds(), "remerge-s")
	st = pullStats(fresh, a)
	b.ReportMetric(st.Duration.Seconds(), "resync-s")
	b.ReportMetric(float64(st.Bytes)/1e6, "resync-MB")
	b.ReportMetric(float64(st.RoundTrips), "resync-roundtrips")
	b.ReportMetric(float64(st.Received), "resync-docs")
	fresh.Close()
	a.Close()
}

func pullStats(n, from *Node) transport.SyncStats {
	n.mesh.mu.Lock()
	defer n.mesh.mu.Unlock()
	return n.mesh.peer(from.DeviceID()).lastStats
}
