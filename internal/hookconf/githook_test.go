package hookconf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/gittest"
	"github.com/memmesh/memmesh/internal/testwait"
)

// waitFile waits for a file a background command writes.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(testwait.Limit)
	for {
		data, err := os.ReadFile(path)
		if err == nil && len(data) > 0 {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestGitHookRoundTrip(t *testing.T) {
	repo, out := t.TempDir(), t.TempDir()
	gittest.Run(t, repo, time.Time{}, "init", "-q")
	hooks := filepath.Join(repo, ".git", "hooks")
	// The user's own hook, with a mode and bytes of its own, which fails.
	theirs := []byte("#!/bin/sh\n# their hook\necho \"$@\" ran > '" + filepath.Join(out, "theirs") + "'\nexit 3\n")
	path := filepath.Join(hooks, GitHook)
	if err := os.WriteFile(path, theirs, 0o750); err != nil {
		t.Fatal(err)
	}
	// memmesh stands in as a script that writes its arguments; its path
	// has a quote and a space to quote.
	bin := filepath.Join(t.TempDir(), "mem'mesh bin")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\" > '"+filepath.Join(out, "memmesh")+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

	res, err := InstallGitHook(hooks, bin, "/my home", "shop", now)
	if err != nil || !res.Changed || res.Backup == "" {
		t.Fatalf("install: %+v, %v", res, err)
	}
	if kept, err := os.ReadFile(filepath.Join(hooks, GitChained)); err != nil || !bytes.Equal(kept, theirs) {
		t.Fatalf("the chained hook holds %q, %v", kept, err)
	}
	if backup, err := os.ReadFile(res.Backup); err != nil || !bytes.Equal(backup, theirs) {
		t.Fatalf("the backup holds %q, %v", backup, err)
	}
	if again, err := InstallGitHook(hooks, bin, "/my home", "shop", now); err != nil || again.Changed {
		t.Fatalf("installing twice: %+v, %v", again, err)
	}
	if ok, err := GitHookInstalled(hooks); !ok || err != nil {
		t.Fatalf("GitHookInstalled = %v, %v", ok, err)
	}

	// A commit runs both hooks and succeeds, though theirs fails.
	gittest.Run(t, repo, time.Time{}, "commit", "-q", "--allow-empty", "-m", "first")
	if got := waitFile(t, filepath.Join(out, "memmesh")); strings.TrimSpace(got) != "--home /my home stale --git --background --ns shop" {
		t.Fatalf("memmesh ran with %q", got)
	}
	if got := waitFile(t, filepath.Join(out, "theirs")); strings.TrimSpace(got) != "ran" {
		t.Fatalf("their hook wrote %q", got)
	}

	res, err = UninstallGitHook(hooks)
	if err != nil || !res.Changed || res.Removed {
		t.Fatalf("uninstall: %+v, %v", res, err)
	}
	back, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(back, theirs) {
		t.Fatalf("after uninstall the hook holds %q, %v; want their hook byte for byte", back, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("their hook's mode after uninstall: %v, %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(hooks, GitChained)); !os.IsNotExist(err) {
		t.Fatalf("the chained hook is still there: %v", err)
	}
	if res, err := UninstallGitHook(hooks); err != nil || res.Changed {
		t.Fatalf("uninstalling from their hook: %+v, %v", res, err)
	}
}

func TestGitHookWithoutAnother(t *testing.T) {
	hooks := filepath.Join(t.TempDir(), "hooks") // not there yet (core.hooksPath)
	now := time.Now()
	if res, err := InstallGitHook(hooks, "/usr/bin/memmesh", "/h", "default", now); err != nil || !res.Changed || res.Backup != "" {
		t.Fatalf("install: %+v, %v", res, err)
	}
	fi, err := os.Stat(filepath.Join(hooks, GitHook))
	if err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("the hook is not executable: %v, %v", fi, err)
	}
	// A new path or namespace rewrites memmesh's hook, chaining nothing.
	if res, err := InstallGitHook(hooks, "/opt/memmesh", "/h", "default", now); err != nil || !res.Changed || res.Backup != "" {
		t.Fatalf("reinstall: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(hooks, GitChained)); !os.IsNotExist(err) {
		t.Fatalf("memmesh's own hook was chained: %v", err)
	}
	if res, err := UninstallGitHook(hooks); err != nil || !res.Removed {
		t.Fatalf("uninstall: %+v, %v", res, err)
	}
	if ok, err := GitHookInstalled(hooks); ok || err != nil {
		t.Fatalf("GitHookInstalled after uninstall = %v, %v", ok, err)
	}
	if _, err := InstallGitHook(hooks, "/usr/bin/memmesh", "/h", "x\nrm -rf ~", now); err == nil {
		t.Fatal("a namespace with a newline was written into the hook")
	}
	if _, err := os.Stat(filepath.Join(hooks, GitHook)); !os.IsNotExist(err) {
		t.Fatalf("a refused hook was written: %v", err)
	}
}
