package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

// TestReplaceKeepsABackup: a replaced file is backed up (into the
// directory given, or beside it), twice in one second under two names,
// and written with its mode through a symlink to it.
func TestReplaceKeepsABackup(t *testing.T) {
	dir, backups := t.TempDir(), filepath.Join(t.TempDir(), "backups")
	real := filepath.Join(dir, "CLAUDE.md")
	os.WriteFile(real, []byte("mine\n"), 0o640)
	link := filepath.Join(dir, "AGENTS.md")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	f, err := Read(link, 1<<10)
	if err != nil || !f.Exists || f.Path != real || string(f.Data) != "mine\n" || f.Mode != 0o640 {
		t.Fatalf("read: %+v, %v", f, err)
	}
	first, err := f.Replace([]byte("new\n"), backups, now)
	if err != nil || filepath.Dir(first) != backups {
		t.Fatalf("replace: %q, %v", first, err)
	}
	second, err := f.Replace([]byte("newer\n"), "", now)
	if err != nil || filepath.Dir(second) != dir || second == first {
		t.Fatalf("replace again: %q, %v", second, err)
	}
	third, _ := f.Replace([]byte("newest\n"), backups, now)
	for _, b := range []string{first, second, third} {
		if data, _ := os.ReadFile(b); string(data) != "mine\n" {
			t.Fatalf("backup %s holds %q", b, data)
		}
	}
	if third == first || !strings.HasSuffix(third, "-1") {
		t.Fatalf("a second backup in one second took %q", third)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
}

// TestReadRefuses: a file over the limit and what is not a regular file
// are left alone; a missing file reads as empty.
func TestReadRefuses(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 11), 0o644)
	if _, err := Read(big, 10); err == nil || !strings.Contains(err.Error(), "more than the 10 allowed: left alone") {
		t.Fatalf("too large: %v", err)
	}
	if _, err := Read(dir, 10); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory: %v", err)
	}
	if f, err := Read(filepath.Join(dir, "none"), 10); err != nil || f.Exists || f.Data != nil {
		t.Fatalf("missing: %+v, %v", f, err)
	}
}
