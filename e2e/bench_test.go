package e2e

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/corpus"
)

// Run with
//
//	go test -run '^$' -bench . -benchtime 200x ./e2e

func reportPercentiles(b *testing.B, unit string, samples []float64) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	b.ReportMetric(samples[len(samples)/2], "p50-"+unit)
	b.ReportMetric(samples[int(0.99*float64(len(samples)-1))], "p99-"+unit)
}

// BenchmarkCLICapture measures `memmesh capture` as a person or a hook runs
// it: a new process that talks to a running daemon and waits for the
// durable acknowledgement.
func BenchmarkCLICapture(b *testing.B) {
	home := benchHome(b)
	startServe(b, home)
	gen := corpus.New(5)
	ms := make([]float64, 0, b.N)
	b.ResetTimer()
	for range b.N {
		m := gen.Next()
		start := time.Now()
		cmd := exec.Command(binary, "--home", home, "capture", "--ns", m.Namespace, m.Content)
		cmd.Env = testEnv(home)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("capture: %v: %s", err, out)
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
	}
	b.StopTimer()
	reportPercentiles(b, "ms", ms)
}

func benchHome(b *testing.B) string {
	home, err := os.MkdirTemp("", "mmb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(home) })
	return home
}
