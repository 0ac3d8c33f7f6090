package sibling

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFind: an executable beside this one wins over one on PATH; without
// it, PATH's is found; with neither, Find fails.
func TestFind(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	onPath := t.TempDir()
	t.Setenv("PATH", onPath)
	name := "memmesh-sibling-test"
	if path, err := Find(name); err == nil {
		t.Fatalf("Find with no %s anywhere = %q, want an error", name, path)
	}

	pathCopy := executable(t, filepath.Join(onPath, name))
	if got, err := Find(name); err != nil || got != pathCopy {
		t.Fatalf("Find = %q, %v; want the one on PATH, %s", got, err, pathCopy)
	}

	beside := executable(t, filepath.Join(filepath.Dir(exe), name))
	if got, err := Find(name); err != nil || got != beside {
		t.Fatalf("Find = %q, %v; want the one beside this executable, %s", got, err, beside)
	}
}

// executable writes a shell script at path and returns path; the test
// removes it.
func executable(t *testing.T, path string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return path
}
