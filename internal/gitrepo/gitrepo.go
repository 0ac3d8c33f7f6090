// Package gitrepo reads git working trees through the git binary: the
// root of a tree, its HEAD, the remote that names it on every machine, its
// history (streamed, with renames) and its files at a commit (their size
// checked before they are read).
// Every call is bounded in time and in the output it reads, runs without a
// terminal prompt and takes no optional locks, so reading a repository
// never stalls or disturbs the user's own git commands.
package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Limits of one git command.
const (
	Timeout   = 30 * time.Second
	MaxOutput = 64 << 20
)

var (
	// ErrNoGit means the git binary is not installed.
	ErrNoGit = errors.New("git is not installed (memmesh reads repositories through the git command)")
	// ErrNotRepo means a directory is not inside a git working tree.
	ErrNotRepo = errors.New("not inside a git working tree")
	// ErrTooLarge means a command printed more than MaxOutput bytes.
	ErrTooLarge = errors.New("git printed more than the output limit")
)

// Run runs git with args in dir and returns what it printed. The command
// ends after Timeout (or when ctx does); its output is capped at MaxOutput.
func Run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return runLimited(ctx, dir, MaxOutput, args...)
}

// runLimited is Run with an output cap of limit bytes.
func runLimited(ctx context.Context, dir string, limit int, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd, stderr := command(ctx, dir, args)
	out := &limitedBuffer{max: limit}
	cmd.Stdout = out
	err := cmd.Run()
	if err == nil && out.over {
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), ErrTooLarge)
	}
	if err := commandError(ctx, dir, args, err, stderr); err != nil {
		return nil, err
	}
	return out.buf.Bytes(), nil
}

// command prepares git with args in dir: no pager, no prompt, no optional
// locks, paths unquoted and literal, messages in English; its standard error goes to
// the returned buffer (the first 4 KiB).
func command(ctx context.Context, dir string, args []string) (*exec.Cmd, *limitedBuffer) {
	argv := append([]string{"-c", "core.quotepath=off", "--no-pager"}, args...)
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_LITERAL_PATHSPECS=1", "LC_ALL=C")
	stderr := &limitedBuffer{max: 4096}
	cmd.Stderr = stderr
	return cmd, stderr
}

// commandError turns how a git command ended into an error: nil when it
// succeeded.
func commandError(ctx context.Context, dir string, args []string, err error, stderr *limitedBuffer) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, exec.ErrNotFound):
		return ErrNoGit
	case ctx.Err() != nil:
		return fmt.Errorf("git %s: %w", strings.Join(args, " "), ctx.Err())
	}
	msg := strings.TrimSpace(stderr.buf.String())
	if strings.Contains(msg, "not a git repository") {
		return fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, msg)
}

// Root returns the top directory of the working tree that holds dir.
func Root(ctx context.Context, dir string) (string, error) {
	out, err := Run(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	root := strings.TrimSpace(string(out))
	if root == "" { // inside .git itself, or a bare repository
		return "", fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	return root, nil
}

// Head returns the commit that HEAD names, or "" in a repository without
// commits. A detached HEAD is a commit like any other.
func Head(ctx context.Context, root string) (string, error) {
	out, err := Run(ctx, root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 {
			return "", nil // no commit yet
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Remote returns the normalized URL of the tree's origin remote, or of its
// first remote when none is called origin; "" when it has no remote.
func Remote(ctx context.Context, root string) (string, error) {
	out, err := Run(ctx, root, "remote")
	if err != nil {
		return "", err
	}
	names := strings.Fields(string(out))
	if len(names) == 0 {
		return "", nil
	}
	name := names[0]
	for _, n := range names {
		if n == "origin" {
			name = n
		}
	}
	out, err = Run(ctx, root, "remote", "get-url", name)
	if err != nil {
		return "", err
	}
	return NormalizeRemote(strings.TrimSpace(string(out))), nil
}

// NormalizeRemote turns the spellings of one repository's URL into one
// name, host and path: https://github.com/Acme/App.git,
// git@github.com:Acme/App and ssh://git@github.com:22/Acme/App/ all become
// github.com/Acme/App. The host is lowercased; the path keeps its case.
// Credentials in the URL are dropped. A local path stays a cleaned path.
func NormalizeRemote(raw string) string {
	raw = strings.TrimSpace(raw)
	host, path := "", raw
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
		host, path = u.Hostname(), u.Path
	} else if at, colon := strings.Index(raw, "@"), strings.Index(raw, ":"); colon > 0 && !strings.Contains(raw[:colon], "/") && (at < 0 || at < colon) {
		host, path = raw[at+1:colon], raw[colon+1:] // scp-like: [user@]host:path
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	path = strings.Trim(path, "/")
	if host == "" {
		return path
	}
	return strings.ToLower(host) + "/" + path
}

// limitedBuffer keeps up to max bytes and notes whether more came.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		b.over = true
		return len(p), nil
	}
	return b.buf.Write(p)
}
