// Package bench measures memmesh through its real components: nodes with
// their own Pebble stores and search indexes, QUIC between them on
// loopback, and the benchmark data given to them. Each benchmark returns a
// report whose fields are its figures; memmesh-bench (`memmesh bench`)
// prints them as a table or as JSON.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/memmesh/memmesh/internal/sibling"
)

// Row is one line of a report's table.
type Row struct {
	Name  string
	Value string
}

// Report is what a benchmark returns: JSON fields for machines, rows for
// people.
type Report interface {
	Rows() []Row
}

// Common holds the options every benchmark has.
type Common struct {
	// Dir is where the benchmark keeps its data; "" means a temporary
	// directory removed afterwards.
	Dir string
	// Log receives progress.
	Log *slog.Logger
}

// SetLog sends progress to log.
func (c *Common) SetLog(log *slog.Logger) { c.Log = log }

// Latencies collects durations and summarises them.
type Latencies []time.Duration

// Percentile returns the p-th percentile (0 < p ≤ 100), nearest rank; 0
// when there are no samples.
func (l Latencies) Percentile(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Summary is the p50 and p99 of latencies in milliseconds.
type Summary struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
}

// Summary returns the p50 and p99 of l.
func (l Latencies) Summary() Summary {
	return Summary{P50: ms(l.Percentile(50)), P99: ms(l.Percentile(99))}
}

func (s Summary) String() string {
	return fmt.Sprintf("p50 %s ms, p99 %s ms", num(s.P50), num(s.P99))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// num formats a figure with three significant digits at least.
func num(f float64) string {
	switch {
	case f >= 100:
		return fmt.Sprintf("%.0f", f)
	case f >= 10:
		return fmt.Sprintf("%.1f", f)
	case f >= 1:
		return fmt.Sprintf("%.2f", f)
	}
	return fmt.Sprintf("%.3f", f)
}

// memmeshExecutable returns binary, or when it is "" the memmesh
// executable beside this one (memmesh-bench) or on PATH: the benchmarks
// that start daemons run `memmesh serve`.
func memmeshExecutable(binary string) (string, error) {
	if binary != "" {
		return binary, nil
	}
	path, err := sibling.Find("memmesh")
	if err != nil {
		return "", fmt.Errorf("bench: the daemons run memmesh, and there is %w: name it with --memmesh, or install it from the clone (go install ./cmd/memmesh)", err)
	}
	return path, nil
}

// workDir returns dir, or a new temporary directory and a function that
// removes it.
func workDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "memmesh-bench-")
	if err != nil {
		return "", nil, fmt.Errorf("bench: work directory: %w", err)
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// logger returns log, or one that discards.
func logger(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// nodeLogger passes on only the warnings and errors of the nodes a
// benchmark starts, so that its own progress stays readable.
func nodeLogger(log *slog.Logger) *slog.Logger {
	return slog.New(warnings{log.Handler()})
}

type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnings{w.Handler.WithAttrs(attrs)}
}

func (w warnings) WithGroup(name string) slog.Handler { return warnings{w.Handler.WithGroup(name)} }

// inPhase runs fn with the profiler label phase=name, which goroutines
// started in fn inherit, so that a CPU profile of a benchmark splits by
// phase (`go tool pprof -tagfocus phase=catchup`).
func inPhase(ctx context.Context, name string, fn func(context.Context) error) error {
	var err error
	pprof.Do(ctx, pprof.Labels("phase", name), func(ctx context.Context) { err = fn(ctx) })
	return err
}
