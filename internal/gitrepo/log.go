package gitrepo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// LogTimeout bounds one read of a repository's history.
const LogTimeout = 10 * time.Minute

// Limits of what Log keeps of one commit.
const (
	MaxSubject = 120  // bytes of a subject line
	maxToken   = 8192 // bytes of one path or header
)

// Change is what a commit did to one file.
type Change struct {
	Status byte   // 'A' added, 'M' modified, 'D' deleted, 'R' renamed, 'T' type changed
	Path   string // the file's path (for a rename, its new path)
	From   string // for a rename, the old path
}

// Commit is one commit as Log reads it.
type Commit struct {
	Hash    string
	At      time.Time // committer time
	Subject string    // the first line of the message, at most MaxSubject bytes
	Changes []Change
}

// Log reads the commits of revs (a range such as "a1b2..HEAD", or "HEAD"),
// oldest first, with the files each changed (renames detected), and calls
// fn with each as it is read: the history streams through and is never
// held whole. At most max commits are read (0: no limit; the newest max
// when there are more). A merge lists no files: the commits it merges do.
// An error from fn stops the read and is returned.
func Log(ctx context.Context, root, revs string, max int, fn func(Commit) error) error {
	ctx, cancel := context.WithTimeout(ctx, LogTimeout)
	defer cancel()
	args := []string{"log", "--reverse", "-z", "--name-status", "-M", "--no-color", "--format=%x01%H %ct %s"}
	if max > 0 {
		args = append(args, "--max-count="+strconv.Itoa(max))
	}
	args = append(args, revs, "--")
	cmd, stderr := command(ctx, root, args)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return commandError(ctx, root, args, err, stderr)
	}
	readErr := readLog(out, fn)
	if readErr != nil {
		cancel() // stop git; its own error is then of no interest
		io.Copy(io.Discard, out)
	}
	waitErr := cmd.Wait()
	if readErr != nil {
		return readErr
	}
	return commandError(ctx, root, args, waitErr, stderr)
}

// readLog parses the output of git log -z --name-status with Log's
// format: NUL-separated tokens, a commit's header starting with \x01, then
// for each file its status and one path (two for a rename or copy).
func readLog(r io.Reader, fn func(Commit) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var c *Commit
	next := func() (string, error) {
		tok, err := readToken(br)
		return strings.TrimPrefix(tok, "\n"), err
	}
	for {
		tok, err := next()
		if errors.Is(err, io.EOF) && tok == "" {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if header, ok := strings.CutPrefix(tok, "\x01"); ok {
			if c != nil {
				if err := fn(*c); err != nil {
					return err
				}
			}
			parsed, perr := parseHeader(header)
			if perr != nil {
				return perr
			}
			c = &parsed
			continue
		}
		if c == nil || tok == "" {
			return fmt.Errorf("git log: unexpected %q", tok)
		}
		ch := Change{Status: tok[0]}
		if ch.Path, err = next(); err != nil && ch.Path == "" {
			return fmt.Errorf("git log: status %q without a path: %w", tok, err)
		}
		if ch.Status == 'R' || ch.Status == 'C' {
			ch.From = ch.Path
			if ch.Path, err = next(); err != nil && ch.Path == "" {
				return fmt.Errorf("git log: rename of %q without a new path: %w", ch.From, err)
			}
			if ch.Status == 'C' { // a copy leaves the old file: the new one is added
				ch.Status, ch.From = 'A', ""
			}
		}
		c.Changes = append(c.Changes, ch)
	}
	if c != nil {
		return fn(*c)
	}
	return nil
}

// readToken reads up to the next NUL (dropped), at most maxToken bytes.
func readToken(br *bufio.Reader) (string, error) {
	var buf []byte
	for {
		part, err := br.ReadSlice(0)
		buf = append(buf, part...)
		if len(buf) > maxToken {
			return "", fmt.Errorf("git log: a token of more than %d bytes", maxToken)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return string(bytes.TrimSuffix(buf, []byte{0})), err
	}
}

// parseHeader parses "HASH UNIXTIME SUBJECT".
func parseHeader(h string) (Commit, error) {
	hash, rest, _ := strings.Cut(h, " ")
	secs, subject, _ := strings.Cut(rest, " ")
	t, err := strconv.ParseInt(secs, 10, 64)
	if len(hash) < 40 || err != nil {
		return Commit{}, fmt.Errorf("git log: bad commit header %q", h)
	}
	if len(subject) > MaxSubject {
		subject = subject[:MaxSubject]
	}
	return Commit{Hash: hash, At: time.Unix(t, 0).UTC(), Subject: subject}, nil
}

// IsAncestor reports whether commit a is an ancestor of (or is) commit b.
// A commit the repository no longer has is no ancestor.
func IsAncestor(ctx context.Context, root, a, b string) (bool, error) {
	_, err := Run(ctx, root, "merge-base", "--is-ancestor", a, b)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && (exit.ExitCode() == 1 || exit.ExitCode() == 128):
		return false, nil // 128: a is unknown (gone after a rewrite and gc)
	}
	return false, err
}

// IsShallow reports whether the repository is a shallow clone: its
// history stops at boundary commits whose parents it does not have.
func IsShallow(ctx context.Context, root string) (bool, error) {
	out, err := Run(ctx, root, "rev-parse", "--is-shallow-repository")
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(out)) == "true", nil
}

// ErrNoFile means a commit has no file at a path.
var ErrNoFile = errors.New("no such file in the commit")

// ReadFile returns the text of the file at path in commit, refusing one
// larger than limit bytes (ErrTooLarge) before reading it: its size is
// asked first.
func ReadFile(ctx context.Context, root, commit, path string, limit int64) ([]byte, error) {
	out, err := Run(ctx, root, "ls-tree", "-l", "--full-tree", commit, "--", path)
	if err != nil {
		return nil, err
	}
	// "<mode> SP <type> SP <object> SP+ <size> TAB <path>"
	meta, _, ok := strings.Cut(string(out), "\t")
	fields := strings.Fields(meta)
	if !ok || len(fields) != 4 || fields[1] != "blob" {
		return nil, fmt.Errorf("%s at %.12s: %w", path, commit, ErrNoFile)
	}
	size, err := strconv.ParseInt(fields[3], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s at %.12s: size %q: %w", path, commit, fields[3], err)
	}
	if size > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than %d: %w", path, size, limit, ErrTooLarge)
	}
	return runLimited(ctx, root, int(limit), "cat-file", "blob", fields[2])
}
