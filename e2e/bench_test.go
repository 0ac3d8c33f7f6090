package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/corpus"
	"github.com/memmesh/memmesh/node"
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

// BenchmarkColdStart measures a daemon starting on a home of 100,000
// memories: time until it answers a search, and its resident memory then.
func BenchmarkColdStart(b *testing.B) {
	const memories = 100_000
	home := benchHome(b)
	file := filepath.Join(home, "corpus.jsonl")
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	if err := corpus.New(6).WriteImport(f, memories); err != nil {
		b.Fatal(err)
	}
	f.Close()
	cmd, c := startServe(b, home)
	start := time.Now()
	res, err := c.Import(context.Background(), mustOpen(b, file))
	if err != nil || res.Imported != memories {
		b.Fatalf("import: %+v %v", res, err)
	}
	b.Logf("imported %d memories in %s (%.0f/s)", memories, time.Since(start).Round(time.Millisecond), memories/time.Since(start).Seconds())
	if _, err := c.Search(context.Background(), node.SearchRequest{Query: "postgres"}); err != nil {
		b.Fatal(err)
	}
	stopServe(b, cmd)

	var readyMS, rssMB []float64
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		cmd, c := startServe(b, home)
		if _, err := c.Search(context.Background(), node.SearchRequest{Query: "retry postgres"}); err != nil {
			b.Fatal(err)
		}
		readyMS = append(readyMS, float64(time.Since(start).Microseconds())/1000)
		rssMB = append(rssMB, rss(b, cmd.Process.Pid))
		b.StopTimer()
		stopServe(b, cmd)
		b.StartTimer()
	}
	b.StopTimer()
	reportPercentiles(b, "ready-ms", readyMS)
	b.ReportMetric(slices.Max(rssMB), "max-rss-MB")
}

func benchHome(b *testing.B) string {
	home, err := os.MkdirTemp("", "mmb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(home) })
	return home
}

func mustOpen(b *testing.B, path string) *os.File {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// stopServe stops a daemon with SIGTERM and waits for it.
func stopServe(b *testing.B, cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.Fatal("daemon did not stop on SIGTERM")
	}
}

// rss returns a process's resident set size in MB.
func rss(b *testing.B, pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				b.Fatal(err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
