package symbols

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/memmesh/memmesh/storage"
)

// benchTree is the tree BenchmarkIndex indexes (a copy of it); empty
// means a generated tree of about 100,000 lines in the five languages.
var benchTree = flag.String("symbols.tree", "", "directory to copy and index in BenchmarkIndex (default: a generated tree)")

// BenchmarkIndex measures indexing a tree into a real store on disk:
// first the whole tree, then again after one file changed. It reports the
// tree's lines per second of wall time and the process's CPU time per
// index (which includes the untimed setup: opening a store, changing the
// file). Run it with
//
//	go test ./symbols -run '^$' -bench BenchmarkIndex -benchtime 3x
//	go test ./symbols -run '^$' -bench BenchmarkIndex -benchtime 3x -args -symbols.tree $(go env GOROOT)/src/net
func BenchmarkIndex(b *testing.B) {
	dir := b.TempDir()
	var lines int
	var err error
	if *benchTree != "" {
		lines, err = copyTree(*benchTree, dir)
	} else {
		seed := uint64(time.Now().UnixNano())
		b.Logf("seed %d", seed)
		lines, err = generateTree(dir, 100_000, seed)
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	open := func(b *testing.B) *Index {
		st, err := storage.Open(b.TempDir(), storage.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return NewIndex(st, Limits{})
	}
	var rep Report
	measure := func(b *testing.B, run func()) {
		cpu0 := cpuTime()
		for b.Loop() {
			run()
		}
		wall, cpu := b.Elapsed(), cpuTime()-cpu0
		b.ReportMetric(float64(lines)*float64(b.N)/wall.Seconds(), "lines/s")
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(rep.Files), "files")
		b.ReportMetric(float64(rep.Symbols), "symbols")
		b.ReportMetric(float64(rep.Parsed), "parsed")
	}
	b.Run("first", func(b *testing.B) {
		measure(b, func() {
			b.StopTimer()
			ix := open(b)
			b.StartTimer()
			if rep, err = ix.Update(ctx, dir, "bench", nil); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("one-changed", func(b *testing.B) {
		ix := open(b)
		if _, err := ix.Update(ctx, dir, "bench", nil); err != nil {
			b.Fatal(err)
		}
		changed := firstSource(b, dir)
		i := 0
		measure(b, func() {
			b.StopTimer()
			i++
			appendFunc(b, changed, i)
			b.StartTimer()
			if rep, err = ix.Update(ctx, dir, "bench", nil); err != nil {
				b.Fatal(err)
			}
			if rep.Parsed != 1 {
				b.Fatalf("%d files parsed after one changed", rep.Parsed)
			}
		})
	})
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// copyTree copies the source files under src that an index reads to dst
// and counts their lines.
func copyTree(src, dst string) (int, error) {
	lines := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != src && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || !d.Type().IsRegular() || Language(p) == "" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		lines += bytes.Count(data, []byte("\n"))
		return os.WriteFile(out, data, 0o644)
	})
	return lines, err
}

// generateTree writes about n lines of Go, Python, JavaScript, TypeScript
// and Rust, drawn from seed, and returns their count.
func generateTree(dir string, n int, seed uint64) (int, error) {
	r := rand.New(rand.NewPCG(seed, 1))
	templates := []struct {
		ext  string
		head string
		def  func(i int, body string) string
	}{
		{".go", "package gen\n\n", func(i int, body string) string {
			return fmt.Sprintf("type T%d struct{ n int }\n\nfunc (t *T%d) M%d(x int) int {\n%s\treturn x\n}\n\nfunc F%d() {}\n\n", i, i, i, body, i)
		}},
		{".py", "", func(i int, body string) string {
			return fmt.Sprintf("class C%d:\n    def m%d(self, x):\n%s        return x\n\n\ndef f%d():\n    pass\n\n\n", i, i, body, i)
		}},
		{".js", "", func(i int, body string) string {
			return fmt.Sprintf("class C%d {\n  m%d(x) {\n%s    return x;\n  }\n}\n\nfunction f%d() {}\n\n", i, i, body, i)
		}},
		{".ts", "", func(i int, body string) string {
			return fmt.Sprintf("export interface I%d {\n  m%d(x: number): number;\n}\n\nexport class C%d implements I%d {\n  m%d(x: number): number {\n%s    return x;\n  }\n}\n\n", i, i, i, i, i, body)
		}},
		{".rs", "", func(i int, body string) string {
			return fmt.Sprintf("pub struct S%d;\n\nimpl S%d {\n    pub fn m%d(&self, x: i64) -> i64 {\n%s        x\n    }\n}\n\n", i, i, i, body)
		}},
	}
	lines, file := 0, 0
	for lines < n {
		t := templates[file%len(templates)]
		var buf bytes.Buffer
		buf.WriteString(t.head)
		for d := range 10 + r.IntN(30) {
			var body bytes.Buffer
			for range 2 + r.IntN(10) {
				fmt.Fprintf(&body, "        // step %d of the work\n", r.IntN(1000))
			}
			buf.WriteString(t.def(file*100+d, body.String()))
		}
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d", file%40), fmt.Sprintf("f%04d%s", file, t.ext))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return 0, err
		}
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			return 0, err
		}
		lines += bytes.Count(buf.Bytes(), []byte("\n"))
		file++
	}
	return lines, nil
}

// firstSource returns the first Go or Python file under dir.
func firstSource(b *testing.B, dir string) string {
	var found string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if found == "" && err == nil && !d.IsDir() && (Language(p) == "go" || Language(p) == "python") {
			found = p
		}
		return nil
	})
	if found == "" {
		b.Fatal("no Go or Python file to change")
	}
	return found
}

// appendFunc adds a function to a Go or Python file.
func appendFunc(b *testing.B, path string, i int) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if Language(path) == "go" {
		fmt.Fprintf(f, "\nfunc Added%d() {}\n", i)
	} else {
		fmt.Fprintf(f, "\n\ndef added%d():\n    pass\n", i)
	}
}
