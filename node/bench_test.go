package node

import (
	"bytes"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/corpus"
)

// Benchmarks report latency percentiles as custom metrics (p50-µs, p99-µs)
// beside ns/op. Capture, import, search and mesh figures come from
// `memmesh bench` (internal/bench); the graph benchmarks are here.

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

// importFile renders count corpus memories as an import file.
func importFile(tb testing.TB, seed uint64, count int) []byte {
	var buf bytes.Buffer
	if err := corpus.New(seed).WriteImport(&buf, count); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if graphPopulated.home != "" {
		os.RemoveAll(graphPopulated.home)
	}
	os.Exit(code)
}
