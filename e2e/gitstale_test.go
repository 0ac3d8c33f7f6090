package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memmesh/memmesh/internal/gittest"
	"github.com/memmesh/memmesh/internal/testwait"
)

// gitIn runs git in dir.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	gittest.Run(t, dir, time.Time{}, args...)
}

// staleReasons runs memmesh stale (with args) in dir and returns the
// reasons of each memory by id.
func staleReasons(t *testing.T, home, dir string, args ...string) map[string][]string {
	t.Helper()
	r := mmIn(t, home, dir, nil, "", append([]string{"stale", "--ns", "shop", "--format", "json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("memmesh stale %v: exit %d\nstderr: %s", args, r.code, r.stderr)
	}
	var out struct {
		Stale []struct {
			Memory  struct{ ID string }
			Reasons []string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("stale output: %v\n%s", err, r.stdout)
	}
	reasons := map[string][]string{}
	for _, s := range out.Stale {
		reasons[s.Memory.ID] = s.Reasons
	}
	return reasons
}

// nextSecond waits into the next second: commit times have seconds only.
func nextSecond() {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
}

// TestStaleGit: through the real binary and its daemon, `stale --git` in a
// repository registers its tree and reads its history; a commit that
// renames a symbol a memory quotes makes the memory stale with the commit;
// `update --confirm` clears it; with the post-commit hook installed, the
// next commit is checked in the background without anyone asking, and
// uninstalling the hook puts the user's own back byte for byte.
func TestStaleGit(t *testing.T) {
	home := newHome(t)
	repo, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "init", "-q")
	write := func(text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(repo, "src"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "src", "auth.ts"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("export function validateToken(t: string) {}\n")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "first")

	var captured struct{ ID string }
	okJSON(t, home, &captured, "capture", "--ns", "shop", "--format", "json", "`src/auth.ts` exports `validateToken()`; the API calls it on every request.")
	id := captured.ID

	r := mmIn(t, home, filepath.Join(repo, "src"), nil, "", "stale", "--git", "--ns", "shop", "--format", "human")
	if r.code != 0 || !strings.Contains(r.stdout, repo+": read 1 commits in the history") {
		t.Fatalf("stale --git: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	nextSecond()
	write("export function checkToken(t: string) {}\n")
	gitIn(t, repo, "commit", "-q", "-am", "rename validateToken")
	got := staleReasons(t, home, repo, "--git")[id]
	if !slices.ContainsFunc(got, func(s string) bool {
		return strings.HasPrefix(s, "src/auth.ts changed in 1 commit since, last ") && strings.HasSuffix(s, " 'rename validateToken'")
	}) ||
		!slices.Contains(got, "validateToken no longer in src/auth.ts") {
		t.Fatalf("reasons after the rename: %q", got)
	}

	ok(t, home, "update", id, "--confirm", "--by", "ana")
	if got := staleReasons(t, home, repo)[id]; len(got) != 0 {
		t.Fatalf("reasons after --confirm: %q", got)
	}

	// The user's own post-commit hook stays, chained, and comes back.
	hook := filepath.Join(repo, ".git", "hooks", "post-commit")
	theirs := []byte("#!/bin/sh\ntouch '" + filepath.Join(repo, ".git", "theirs-ran") + "'\n")
	if err := os.WriteFile(hook, theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := mmIn(t, home, repo, nil, "", "hooks", "install", "--git", "--ns", "shop"); r.code != 0 {
		t.Fatalf("hooks install --git: exit %d\n%s", r.code, r.stderr)
	}
	nextSecond()
	write("export function checkToken(token: string) {}\n")
	gitIn(t, repo, "commit", "-q", "-am", "tidy after the hook")
	deadline := time.Now().Add(testwait.Limit)
	for {
		got := staleReasons(t, home, repo)[id]
		if slices.ContainsFunc(got, func(s string) bool { return strings.HasSuffix(s, " 'tidy after the hook'") }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hook's background check did not show the commit: %q", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "theirs-ran")); err != nil {
		t.Fatalf("the chained hook did not run: %v", err)
	}
	if r := mmIn(t, home, repo, nil, "", "hooks", "uninstall", "--git"); r.code != 0 {
		t.Fatalf("hooks uninstall --git: exit %d\n%s", r.code, r.stderr)
	}
	if back, err := os.ReadFile(hook); err != nil || string(back) != string(theirs) {
		t.Fatalf("after uninstall the hook holds %q, %v", back, err)
	}
}
