package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/corpus"
)

// Benchmarks report latency percentiles as custom metrics (p50-µs, p99-µs)
// beside ns/op. Run them with
//
//	go test -run '^$' -bench . -benchtime 2000x ./node

// latencies collects per-operation durations and reports percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	at := func(p float64) float64 { return float64(l[int(p*float64(len(l)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

func BenchmarkRemember(b *testing.B) {
	n := testNode(b, "")
	gen := corpus.New(1)
	reqs := make([]RememberRequest, b.N)
	for i := range reqs {
		m := gen.Next()
		reqs[i] = RememberRequest{Namespace: m.Namespace, Kind: m.Kind, Title: m.Title, Content: m.Content, Tags: m.Tags}
	}
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := n.Remember(context.Background(), reqs[i]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	lat.report(b)
}

// importFile renders count corpus memories as an import file.
func importFile(tb testing.TB, seed uint64, count int) []byte {
	var buf bytes.Buffer
	if err := corpus.New(seed).WriteImport(&buf, count); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkImport measures durable import throughput (memories/s) and, as
// searchable-s, the time until the search index has caught up as well.
func BenchmarkImport(b *testing.B) {
	const perOp = 10000
	data := importFile(b, 2, perOp)
	var searchable time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		n, err := New(Config{Home: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		n.Start(context.Background())
		b.StartTimer()
		start := time.Now()
		res, err := n.Import(context.Background(), bytes.NewReader(data))
		if err != nil || res.Imported != perOp {
			b.Fatalf("import: %+v %v", res, err)
		}
		b.StopTimer()
		if _, err := n.Search(context.Background(), SearchRequest{Query: "postgres"}); err != nil {
			b.Fatal(err)
		}
		searchable += time.Since(start)
		n.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(perOp*b.N)/b.Elapsed().Seconds(), "memories/s")
	b.ReportMetric(searchable.Seconds()/float64(b.N), "searchable-s")
}

// populated holds one home per corpus size, filled once per benchmark run.
var populated = struct {
	sync.Mutex
	homes map[int]string
}{homes: map[int]string{}}

func populatedHome(b *testing.B, count int) string {
	populated.Lock()
	defer populated.Unlock()
	if home, ok := populated.homes[count]; ok {
		return home
	}
	home, err := os.MkdirTemp("", "memmesh-bench-")
	if err != nil {
		b.Fatal(err)
	}
	n, err := New(Config{Home: home})
	if err != nil {
		b.Fatal(err)
	}
	n.Start(context.Background())
	if _, err := n.Import(context.Background(), bytes.NewReader(importFile(b, 3, count))); err != nil {
		b.Fatal(err)
	}
	// Wait for the index, then close so that the benchmark opens the home
	// cold, as a restarted daemon would.
	if _, err := n.Search(context.Background(), SearchRequest{Query: "warm"}); err != nil {
		b.Fatal(err)
	}
	n.Close()
	populated.homes[count] = home
	return home
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, home := range populated.homes {
		os.RemoveAll(home)
	}
	if graphPopulated.home != "" {
		os.RemoveAll(graphPopulated.home)
	}
	os.Exit(code)
}

func BenchmarkSearch(b *testing.B) {
	for _, size := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("memories=%d", size), func(b *testing.B) {
			n := testNode(b, populatedHome(b, size))
			gen := corpus.New(4)
			queries := make([]string, 256)
			for i := range queries {
				queries[i] = gen.Query()
			}
			// Warm the index's caches, as a running daemon's are.
			for _, q := range queries {
				n.Search(context.Background(), SearchRequest{Query: q})
			}
			lat := make(latencies, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				res, err := n.Search(context.Background(), SearchRequest{Query: queries[i%len(queries)], Limit: 10})
				if err != nil || len(res.Results) == 0 {
					b.Fatalf("search %q: %d results, %v", queries[i%len(queries)], len(res.Results), err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			lat.report(b)
		})
	}
}
