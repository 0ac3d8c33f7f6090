package bridge

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/internal/gitrepo"
)

// Project is a Claude Code project of this machine and where its auto
// memory goes.
type Project struct {
	// Dir is the project's folder under ~/.claude/projects.
	Dir string `json:"dir"`
	// MemoryDir is its auto-memory directory (Dir/memory).
	MemoryDir string `json:"memory_dir"`
	// Path is the project's working directory, from its transcripts.
	Path      string `json:"path,omitempty"`
	Root      string `json:"root,omitempty"`   // its git working tree
	Remote    string `json:"remote,omitempty"` // the tree's remote, normalized
	Namespace string `json:"namespace,omitempty"`
	// Note says something the user should know that does not stop the
	// mirror (a memory directory that is a symlink).
	Note string `json:"note,omitempty"`
	// Skipped says why the project is not mirrored; "" when it is.
	Skipped string `json:"skipped,omitempty"`
}

// maxProjects bounds the projects looked at in one pass.
const maxProjects = 1000

// projects finds the projects under ClaudeHome/projects, or the one of
// dir when dir is set.
func (b *Bridge) projects(ctx context.Context, dir string) ([]Project, error) {
	if dir != "" {
		p, err := b.projectOf(ctx, dir)
		return []Project{p}, err
	}
	root := filepath.Join(b.cfg.ClaudeHome, "projects")
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Claude Code's projects: %w", err)
	}
	var out []Project
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if len(out) == maxProjects {
			b.log.Warn("more Claude Code projects than a pass looks at", "max", maxProjects)
			break
		}
		p := Project{Dir: filepath.Join(root, e.Name())}
		p.MemoryDir = filepath.Join(p.Dir, "memory")
		p.Path = projectCwd(p.Dir)
		b.resolve(ctx, &p)
		out = append(out, p)
	}
	return out, nil
}

// projectOf is the project of the working directory dir: the folder
// Claude Code keeps for its git root, or dir outside git (made when
// missing), whose name is that path with every character but letters and
// digits as "-".
func (b *Bridge) projectOf(ctx context.Context, dir string) (Project, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Project{}, err
	}
	p := Project{Path: abs}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return p, fmt.Errorf("project %s: not a directory", abs)
	}
	root, err := gitrepo.Root(ctx, abs)
	if errors.Is(err, gitrepo.ErrNotRepo) {
		root = abs // outside git, Claude Code keys on the directory itself
	} else if err != nil {
		return p, fmt.Errorf("project %s: %w", abs, err)
	}
	p.Dir = filepath.Join(b.cfg.ClaudeHome, "projects", EncodePath(root))
	p.MemoryDir = filepath.Join(p.Dir, "memory")
	b.resolve(ctx, &p)
	return p, nil
}

var notAlnum = regexp.MustCompile(`[^a-zA-Z0-9]`)

// EncodePath is the name of a project's folder under ~/.claude/projects:
// its path with each character that is not an ASCII letter or digit
// replaced by "-" (so /home/me/my_app is -home-me-my-app). Decoding it is
// ambiguous; a project's path is read from its transcripts instead.
func EncodePath(path string) string { return notAlnum.ReplaceAllString(path, "-") }

// resolve finds a project's git tree, remote and namespace, or why it is
// skipped.
func (b *Bridge) resolve(ctx context.Context, p *Project) {
	if p.Path == "" {
		p.Skipped = "no transcript names its working directory (run Claude Code there once, or give --project DIR)"
		return
	}
	if st, err := os.Lstat(p.MemoryDir); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(p.MemoryDir)
		if err != nil {
			p.Skipped = fmt.Sprintf("its memory directory is a symlink that does not resolve: %v", err)
			return
		}
		if st, err := os.Stat(target); err != nil || !st.IsDir() {
			p.Skipped = "its memory directory is a symlink to something that is not a directory"
			return
		}
		// Followed: the directory is where the user keeps it (a synced
		// folder, dotfiles). Its files that are symlinks are never
		// followed nor written.
		p.Note = "the memory directory is a symlink to " + target + " (followed)"
		p.MemoryDir = target
	}
	if root, err := gitrepo.Root(ctx, p.Path); err == nil {
		p.Root = root
		if remote, err := gitrepo.Remote(ctx, root); err == nil {
			p.Remote = remote
		}
	}
	if b.cfg.Namespace != nil {
		p.Namespace = b.cfg.Namespace(p.Path, p.Remote)
	}
	switch {
	case p.Namespace != "":
	case p.Root == "":
		p.Skipped = fmt.Sprintf("%s is not in a git working tree and no 'memmesh map' names it", p.Path)
	default:
		p.Skipped = fmt.Sprintf("the git tree %s has no remote and no 'memmesh map' names it (add one: memmesh map %s NAMESPACE)", p.Root, p.Root)
	}
}

// Bounds of the search for a project's working directory.
const (
	maxTranscriptsRead = 5
	maxLinesRead       = 200
)

// projectCwd returns the working directory its newest transcripts name
// (their "cwd"), or "".
func projectCwd(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	type file struct {
		name string
		mod  int64
	}
	var files []file
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".jsonl") && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				files = append(files, file{e.Name(), info.ModTime().UnixNano()})
			}
		}
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(b.mod, a.mod) })
	for _, f := range files[:min(len(files), maxTranscriptsRead)] {
		if cwd := readCwd(filepath.Join(dir, f.name)); cwd != "" {
			return cwd
		}
	}
	return ""
}

func readCwd(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 0; n < maxLinesRead && sc.Scan(); n++ {
		if !strings.Contains(sc.Text(), `"cwd"`) {
			continue
		}
		var rec struct {
			Cwd string `json:"cwd"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && filepath.IsAbs(rec.Cwd) {
			return filepath.Clean(rec.Cwd)
		}
	}
	return ""
}
