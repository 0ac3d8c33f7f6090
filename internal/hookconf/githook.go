package hookconf

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memmesh/memmesh/internal/safefile"
)

// The git hook memmesh installs: post-commit, in the repository's hooks
// directory (git rev-parse --git-path hooks, which follows core.hooksPath
// and linked worktrees). A post-commit hook that was there is moved aside
// to GitChained, byte for byte, and run first by memmesh's; uninstalling
// moves it back.
const (
	GitHook    = "post-commit"
	GitChained = "post-commit.memmesh-chained"
	gitMarker  = "# memmesh post-commit hook"
)

// gitHookScript is the hook: it runs the hook it replaced, then asks
// memmesh (at its absolute path, on its home) to check the namespace's
// memories against the new commit in the background, and always succeeds
// at once, so that a commit never waits for or fails by memmesh.
func gitHookScript(memmesh, home, ns string) []byte {
	return []byte(`#!/bin/sh
` + gitMarker + `: asks the memmesh daemon to check the memories of
# namespace ` + ns + ` against the new commit, in the background. Installed by
# 'memmesh hooks install --git'; 'memmesh hooks uninstall --git' puts back
# the hook that was here before (` + GitChained + `).
chained="$(dirname "$0")/` + GitChained + `"
if [ -x "$chained" ]; then
	"$chained" "$@"
fi
(` + shellQuote(memmesh) + ` --home ` + shellQuote(home) + ` stale --git --background --ns ` + shellQuote(ns) + ` </dev/null >/dev/null 2>&1 &) >/dev/null 2>&1
exit 0
`)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// InstallGitHook writes memmesh's post-commit hook into the hooks
// directory dir for namespace ns, running memmesh at the path memmesh on
// the home home.
// An existing hook of memmesh's is rewritten (a new path or namespace);
// another hook is backed up beside itself and moved to GitChained, which
// memmesh's hook runs first.
func InstallGitHook(dir, memmesh, home, ns string, now time.Time) (Result, error) {
	path := filepath.Join(dir, GitHook)
	res := Result{Path: path, Events: []string{GitHook}}
	for _, s := range []string{memmesh, home, ns} {
		if s == "" || strings.ContainsAny(s, "\n\r\x00") {
			return res, fmt.Errorf("git hook: %q cannot be written into a script", s)
		}
	}
	script := gitHookScript(memmesh, home, ns)
	cur, err := readHook(path)
	if err != nil {
		return res, err
	}
	switch {
	case cur.Exists && bytes.Equal(cur.Data, script):
		return res, nil
	case cur.Exists && !isMemmeshHook(cur.Data):
		chained := filepath.Join(dir, GitChained)
		if _, err := os.Lstat(chained); err == nil {
			return res, fmt.Errorf("%s and %s both exist: move one away first", path, chained)
		}
		if res.Backup, err = cur.Backup("", now); err != nil {
			return res, err
		}
		if err := os.Rename(path, chained); err != nil {
			return res, fmt.Errorf("move %s aside: %w", path, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	if err := safefile.WriteAtomic(path, script, 0o755); err != nil {
		return res, err
	}
	res.Changed = true
	return res, nil
}

// UninstallGitHook takes memmesh's post-commit hook out of the hooks
// directory dir and puts back the hook it chained, if any. A hook that is
// not memmesh's is left alone.
func UninstallGitHook(dir string) (Result, error) {
	path := filepath.Join(dir, GitHook)
	res := Result{Path: path, Events: []string{GitHook}}
	cur, err := readHook(path)
	if err != nil || !cur.Exists || !isMemmeshHook(cur.Data) {
		return res, err
	}
	chained := filepath.Join(dir, GitChained)
	if _, err := os.Lstat(chained); err == nil {
		if err := os.Rename(chained, path); err != nil {
			return res, fmt.Errorf("put back %s: %w", chained, err)
		}
	} else if err := os.Remove(path); err != nil {
		return res, err
	} else {
		res.Removed = true
	}
	res.Changed = true
	return res, nil
}

// GitHookInstalled reports whether memmesh's post-commit hook is in the
// hooks directory dir.
func GitHookInstalled(dir string) (bool, error) {
	cur, err := readHook(filepath.Join(dir, GitHook))
	return cur.Exists && isMemmeshHook(cur.Data), err
}

// readHook reads a hook without following a symlink: a linked hook is
// moved aside as the link it is.
func readHook(path string) (safefile.File, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return safefile.File{Path: path, Mode: 0o755}, nil
	}
	if err != nil {
		return safefile.File{}, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		return safefile.File{Path: path, Data: []byte(target), Mode: 0o644, Exists: true}, err
	}
	return safefile.Read(path, MaxFile)
}

func isMemmeshHook(data []byte) bool {
	return bytes.Contains(data, []byte(gitMarker))
}
