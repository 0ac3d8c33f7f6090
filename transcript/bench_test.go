//go:build unix

package transcript

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeClaudeSession writes a Claude Code transcript of at least size
// bytes, the mix of a working session (prompts, replies, thinking, shell
// commands and edits with outputs of a few hundred bytes to a few KB),
// from a fixed seed, and returns its path.
func writeClaudeSession(tb testing.TB, size int64) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "a1b2c3d4-0000-4000-8000-000000000001.jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(15, 50))
	words := strings.Fields("the build fails because the cache key ignores the go version so a stale object is linked run go test again with count one and clamp the retry jitter in client retry go")
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	var written int64
	line := func(typ string, content any) {
		at = at.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		rec := map[string]any{
			"parentUuid": "p", "isSidechain": false, "userType": "external", "cwd": "/home/dev/src/fetchkit",
			"sessionId": "a1b2c3d4-0000-4000-8000-000000000001", "version": "2.0.14", "gitBranch": "main",
			"type": typ, "uuid": fmt.Sprintf("u-%d", written), "timestamp": at.Format(time.RFC3339Nano),
			"message": map[string]any{"role": typ, "content": content},
		}
		data, _ := json.Marshal(rec)
		n, _ := w.Write(append(data, '\n'))
		written += int64(n)
	}
	for i := 0; written < size; i++ {
		line("user", text(40+rng.IntN(300)))
		line("assistant", []any{map[string]any{"type": "thinking", "thinking": text(200), "signature": "EqQBCkYI"}})
		line("assistant", []any{map[string]any{"type": "text", "text": text(100 + rng.IntN(600))}})
		for j := range 1 + rng.IntN(4) {
			id := fmt.Sprintf("toolu_%d_%d", i, j)
			if rng.IntN(3) == 0 {
				line("assistant", []any{map[string]any{"type": "tool_use", "id": id, "name": "Edit",
					"input": map[string]any{"file_path": "/home/dev/src/fetchkit/client/retry.go", "old_string": text(80), "new_string": text(90)}}})
			} else {
				line("assistant", []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash",
					"input": map[string]any{"command": "go test ./client -run TestRetry", "description": "Run the tests"}}})
			}
			line("user", []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": text(200 + rng.IntN(4000)), "is_error": rng.IntN(5) == 0}})
		}
	}
	if err := w.Flush(); err != nil {
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
