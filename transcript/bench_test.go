//go:build unix

package transcript

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/corpus"
)

// writeClaudeSession writes the generated Claude Code transcript of
// internal/corpus (fixed seed) of at least size bytes, and returns its
// path.
func writeClaudeSession(tb testing.TB, size int64) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), corpus.ClaudeSessionID+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := corpus.WriteClaudeSession(f, size, 15); err != nil {
		tb.Fatal(err)
	}
	return path
}

// cpu is the CPU time the process has used, user and system.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkClaudeCodeRead reads a 50 MB Claude Code transcript from its
// start, as the first ingest of a session does.
func BenchmarkClaudeCodeRead(b *testing.B) {
	path := writeClaudeSession(b, 50<<20)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	lim := Limits{Turns: 1 << 30, Bytes: 1 << 40}
	turns := 0
	b.SetBytes(fi.Size())
	b.ResetTimer()
	start := cpu()
	for b.Loop() {
		batch, err := ClaudeCode{}.Read(path, Cursor{}, lim)
		if err != nil || batch.More || len(batch.Warnings) > 0 {
			b.Fatalf("read: %v, more %v, warnings %v", err, batch.More, batch.Warnings)
		}
		turns += len(batch.Session.Turns)
	}
	b.ReportMetric(float64(turns)/b.Elapsed().Seconds(), "turns/s")
	b.ReportMetric(float64(cpu()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// BenchmarkClaudeCodeReread reads a 50 MB Claude Code transcript again
// after it grew by one turn, as every ingest after the first does.
func BenchmarkClaudeCodeReread(b *testing.B) {
	path := writeClaudeSession(b, 50<<20)
	first, err := ClaudeCode{}.Read(path, Cursor{}, Limits{Turns: 1 << 30, Bytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	cur := first.Cursor
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ResetTimer()
	start := cpu()
	for b.Loop() {
		if _, err := f.WriteString(claudeTurn); err != nil {
			b.Fatal(err)
		}
		batch, err := ClaudeCode{}.Read(path, cur, Limits{})
		if err != nil || len(batch.Session.Turns) != 1 || batch.Restarted {
			b.Fatalf("re-read: %v, %d turns, restarted %v", err, len(batch.Session.Turns), batch.Restarted)
		}
		cur = batch.Cursor
	}
	b.ReportMetric(float64(cpu()-start)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}
