// Package gittest runs git for tests: with a fixed identity, without the
// user's configuration, and at a commit time the test chooses.
package gittest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Run runs git with args in dir, dating commits at (now when zero), and
// returns what it printed, trimmed; a failure fails the test.
func Run(tb testing.TB, dir string, at time.Time, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if !at.IsZero() {
		date := fmt.Sprintf("%d +0000", at.Unix())
		cmd.Env = append(cmd.Env, "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Repo is a real git repository in a test's temporary directory,
// committed to at times the test chooses.
type Repo struct {
	tb  testing.TB
	Dir string
	At  time.Time // the time of the next commit
}

// NewRepo makes a repository whose first commit is dated at.
func NewRepo(tb testing.TB, at time.Time) *Repo {
	tb.Helper()
	dir, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	r := &Repo{tb: tb, Dir: dir, At: at}
	r.Git("init", "-q", "-b", "main")
	return r
}

// Git runs git in the repository, dating commits at r.At.
func (r *Repo) Git(args ...string) string {
	r.tb.Helper()
	return Run(r.tb, r.Dir, r.At, args...)
}

// Write writes files (path, text pairs) into the working tree.
func (r *Repo) Write(pathText ...string) {
	r.tb.Helper()
	for i := 0; i+1 < len(pathText); i += 2 {
		p := filepath.Join(r.Dir, pathText[i])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(pathText[i+1]), 0o644); err != nil {
			r.tb.Fatal(err)
		}
	}
}

// Commit commits everything at r.At, moves r.At on a minute and returns
// the commit's hash.
func (r *Repo) Commit(msg string) string {
	r.tb.Helper()
	r.Git("add", "-A")
	r.Git("commit", "-q", "--allow-empty", "-m", msg)
	r.At = r.At.Add(time.Minute)
	return r.Git("rev-parse", "HEAD")
}
