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

// Files reads the files of one commit through two git cat-file processes
// that run until Close (or for LogTimeout at most): one tells a file's
// size, so that a file larger than asked is never read, the other reads
// the contents. It is not safe for concurrent use.
type Files struct {
	root, commit string
	ctx          context.Context
	cancel       context.CancelFunc
	sizes, blobs *catFile
	err          error // the first failure: the processes are not usable after it
}

// catFile is a running git cat-file --batch or --batch-check.
type catFile struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *limitedBuffer
}

// NewFiles returns a reader of the files of commit in the tree at root;
// its processes start at the first Read.
func NewFiles(ctx context.Context, root, commit string) *Files {
	ctx, cancel := context.WithTimeout(ctx, LogTimeout)
	return &Files{root: root, commit: commit, ctx: ctx, cancel: cancel}
}

func (f *Files) start(mode string) (*catFile, error) {
	args := []string{"cat-file", mode}
	cmd, stderr := command(f.ctx, f.root, args)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, commandError(f.ctx, f.root, args, err, stderr)
	}
	return &catFile{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), stderr: stderr}, nil
}

// ask writes one request line and reads the answer's header line.
func (c *catFile) ask(req string) (string, error) {
	if _, err := io.WriteString(c.in, req+"\n"); err != nil {
		return "", err
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// Read returns the text of the file at path in the commit, refusing one
// larger than limit bytes (ErrTooLarge) before reading it.
func (f *Files) Read(path string, limit int64) ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	if strings.ContainsAny(path, "\n\x00") || path == "" {
		return nil, fmt.Errorf("%q: %w", path, ErrNoFile)
	}
	text, err := f.read(path, limit)
	if err != nil && !errors.Is(err, ErrNoFile) && !errors.Is(err, ErrTooLarge) {
		f.err = fmt.Errorf("git cat-file in %s: %w", f.root, err)
		if f.ctx.Err() != nil {
			f.err = fmt.Errorf("git cat-file in %s: %w", f.root, f.ctx.Err())
		}
		return nil, f.err
	}
	return text, err
}

func (f *Files) read(path string, limit int64) ([]byte, error) {
	var err error
	if f.sizes == nil {
		if f.sizes, err = f.start("--batch-check"); err != nil {
			return nil, err
		}
	}
	// "<object> SP <type> SP <size>", or "<request> SP missing"
	head, err := f.sizes.ask(f.commit + ":" + path)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(head)
	if len(fields) != 3 || fields[1] != "blob" {
		return nil, fmt.Errorf("%s at %.12s: %w", path, f.commit, ErrNoFile)
	}
	size, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: size %q: %w", path, fields[2], err)
	}
	if size > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than %d: %w", path, size, limit, ErrTooLarge)
	}
	if f.blobs == nil {
		if f.blobs, err = f.start("--batch"); err != nil {
			return nil, err
		}
	}
	if head, err = f.blobs.ask(fields[0]); err != nil {
		return nil, err
	}
	if got := strings.Fields(head); len(got) != 3 || got[2] != fields[2] {
		return nil, fmt.Errorf("%s: cat-file answered %q", path, head)
	}
	text := make([]byte, size+1) // the text and its closing newline
	if _, err := io.ReadFull(f.blobs.out, text); err != nil {
		return nil, err
	}
	return text[:size], nil
}

// Close ends the processes; the Files may not be used after it.
func (f *Files) Close() error {
	var errs []error
	for _, c := range []*catFile{f.sizes, f.blobs} {
		if c != nil {
			c.in.Close()
			if err := c.cmd.Wait(); err != nil && f.err == nil && f.ctx.Err() == nil {
				errs = append(errs, commandError(f.ctx, f.root, c.cmd.Args[1:], err, c.stderr))
			}
		}
	}
	f.sizes, f.blobs = nil, nil
	f.cancel()
	return errors.Join(errs...)
}
