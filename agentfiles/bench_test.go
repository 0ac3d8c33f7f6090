package agentfiles

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigFile is an instruction file of n sections of the CLAUDE.md fixture's
// body, each under its own heading.
func bigFile(b *testing.B, n int) []byte {
	fixture, err := readFixtureFile("CLAUDE.md")
	if err != nil {
		b.Fatal(err)
	}
	var s strings.Builder
	for i := range n {
		fmt.Fprintf(&s, "# Part %d\n\n%s\n", i, strings.ReplaceAll(string(fixture), "# CLAUDE.md", ""))
	}
	return []byte(s.String())
}

// BenchmarkParse reads a 64 KiB instruction file (about 880 items).
func BenchmarkParse(b *testing.B) {
	data := bigFile(b, 52)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReimport imports the CLAUDE.md fixture (16 items) into a real
// node again, unchanged: what a pre-commit or a daemon pays to keep a
// file's memories in step.
func BenchmarkReimport(b *testing.B) {
	n := testNode(b)
	items, _ := Parse(bigFile(b, 1), DefaultLimits())
	opt := ImportOptions{Namespace: "acme", Format: ClaudeMD}
	if _, err := Import(context.Background(), n, claudeSource, items, opt); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if res, err := Import(context.Background(), n, claudeSource, items, opt); err != nil || res.Unchanged != len(items) {
			b.Fatalf("%+v, %v", res, err)
		}
	}
}

// BenchmarkCheck runs an export --check of an up-to-date AGENTS.md
// holding the fixture's memories.
func BenchmarkCheck(b *testing.B) {
	n := testNode(b)
	items, _ := Parse(bigFile(b, 1), DefaultLimits())
	if _, err := Import(context.Background(), n, claudeSource, items, ImportOptions{Namespace: "acme", Format: ClaudeMD}); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "AGENTS.md")
	os.WriteFile(path, []byte("# AGENTS.md\n"), 0o644)
	src, err := Locate(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	opt := ExportOptions{Namespace: "acme", Format: AgentsMD, BackupDir: b.TempDir()}
	if _, err := Export(context.Background(), n, src, opt); err != nil {
		b.Fatal(err)
	}
	opt.Check = true
	for b.Loop() {
		if _, err := Export(context.Background(), n, src, opt); err != nil {
			b.Fatal(err)
		}
	}
}
