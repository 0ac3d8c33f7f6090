package agentfiles

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/memmesh/memmesh/internal/gitrepo"
	"github.com/memmesh/memmesh/internal/safefile"
)

// Source is an agent instruction file located for an import or an export.
type Source struct {
	Path string // as given, made absolute
	Real string // the file itself, symlinks resolved (AGENTS.md linked to CLAUDE.md is CLAUDE.md)
	Root string // the top of its git working tree; "" outside one
	// Key names the file in memories' provenance: its path from Root
	// ("CLAUDE.md", ".github/copilot-instructions.md") in a git tree, so
	// that every clone names it alike; its absolute path outside one.
	Key string
}

// Session is the provenance session of the memories imported from the
// file: "file:" and its key.
func (s Source) Session() string { return "file:" + s.Key }

// Name is the file's name, the section of what no heading is over.
func (s Source) Name() string { return filepath.Base(s.Real) }

// ErrOutside means a symlink leads out of the file's repository (or, out
// of one, out of its directory).
var ErrOutside = errors.New("agentfiles: symlink leads outside")

// Locate finds the file at path: its repository and key. A symlink is
// followed only within the repository that holds the link (outside any,
// within the link's directory): a cloned repository's CLAUDE.md that
// points at ~/.ssh/config is neither read into memories nor written.
// The file need not exist (an export creates it).
func Locate(ctx context.Context, path string) (Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Source{}, err
	}
	s := Source{Path: abs}
	dir := filepath.Dir(abs)
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	s.Real = filepath.Join(realDir, filepath.Base(abs))
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		s.Real = r
	} else if !errors.Is(err, fs.ErrNotExist) {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	bound := realDir
	root, err := gitrepo.Root(ctx, dir)
	switch {
	case err == nil:
		if s.Root, err = filepath.EvalSymlinks(root); err != nil {
			return s, err
		}
		bound = s.Root
	case errors.Is(err, gitrepo.ErrNotRepo), errors.Is(err, gitrepo.ErrNoGit):
	default:
		return s, err
	}
	rel, err := filepath.Rel(bound, s.Real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		where := "its directory " + bound
		if s.Root != "" {
			where = "the repository " + bound
		}
		return s, fmt.Errorf("%w: %s leads to %s, outside %s; give that file's own path to use it", ErrOutside, path, s.Real, where)
	}
	s.Key = s.Real
	if s.Root != "" {
		s.Key = filepath.ToSlash(rel)
	}
	if len(s.Session()) > maxSession || strings.ContainsFunc(s.Key, unicode.IsControl) {
		return s, fmt.Errorf("%s: a path of control characters or over %d bytes cannot name the memories' provenance; move the file", path, maxSession-len("file:"))
	}
	return s, nil
}

// maxSession is the longest provenance session a node keeps a thread
// for, and so lists a file's memories by.
const maxSession = 256

// Read reads the file within lim.File bytes (a missing file reads as
// empty, Exists false); a directory, a device or a pipe is refused.
func (s Source) Read(lim Limits) (safefile.File, error) {
	return safefile.Read(s.Real, int64(lim.File))
}

// writable refuses a file whose mode allows no one to write it: the
// user made it read-only, and a rename would replace it all the same.
func writable(f safefile.File) error {
	if f.Exists && f.Mode&0o222 == 0 {
		return fmt.Errorf("%s is read-only (mode %v): left as it is; make it writable to export into it", f.Path, f.Mode)
	}
	return nil
}
