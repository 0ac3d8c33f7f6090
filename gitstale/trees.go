package gitstale

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/internal/gitrepo"
	"github.com/memmesh/memmesh/internal/projmap"
)

// The registry of the git working trees each namespace has on this
// machine: local data (treePrefix + namespace + NUL + root), never
// replicated, since a tree's path means something on one machine only.
const (
	treePrefix = "gittree/"
	// maxMapTrees bounds the trees one mapping's glob expands to.
	maxMapTrees = 64
	// maxTreeRoot bounds the length of a tree's path.
	maxTreeRoot = 512
)

// treeRecord is what the registry keeps of a tree.
type treeRecord struct {
	Source string    `json:"source"`
	Added  time.Time `json:"added"`
}

// Trees returns the git working trees of namespace ns on this machine,
// sorted by root: those where a check was asked for or a hook installed
// (AddTree), and those a project mapping of the home (memmesh map) sends
// to ns, found by expanding the mapping's glob (at most 64 matches each)
// and keeping the matches that are the top of a working tree. A
// registered tree whose directory is gone is listed as Missing.
func (c *Checker) Trees(ns string) ([]api.GitTree, error) {
	ns, err := c.namespace(ns)
	if err != nil {
		return nil, err
	}
	byRoot := map[string]api.GitTree{}
	prefix := treePrefix + ns + "\x00"
	err = c.store.ScanLocal(prefix, func(key string, value []byte) error {
		var rec treeRecord
		if err := json.Unmarshal(value, &rec); err != nil {
			return fmt.Errorf("tree record %q: %w", key, err)
		}
		root := strings.TrimPrefix(key, prefix)
		byRoot[root] = api.GitTree{Namespace: ns, Root: root, Source: rec.Source, Missing: !isTreeRoot(root)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the trees of %s: %w", ns, err)
	}
	for _, root := range c.mappedTrees(ns) {
		if _, ok := byRoot[root]; !ok {
			byRoot[root] = api.GitTree{Namespace: ns, Root: root, Source: api.TreeFromMap}
		}
	}
	out := make([]api.GitTree, 0, len(byRoot))
	for _, t := range byRoot {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b api.GitTree) int { return cmp.Compare(a.Root, b.Root) })
	return out, nil
}

// mappedTrees returns the working trees the home's project mappings send
// to ns. Unreadable mappings are logged and give none: the registered
// trees still count.
func (c *Checker) mappedTrees(ns string) []string {
	maps, err := projmap.Load(c.home)
	if err != nil {
		c.log.Warn("project mappings not read for git trees", "err", err)
		return nil
	}
	var roots []string
	for _, m := range maps {
		if mns, err := c.namespace(m.Namespace); err != nil || mns != ns {
			continue
		}
		matches, err := filepath.Glob(m.Glob)
		if err != nil {
			continue
		}
		if len(matches) > maxMapTrees {
			c.log.Warn("a mapping matches too many directories; only the first are checked as git trees",
				"glob", m.Glob, "matches", len(matches), "kept", maxMapTrees)
			matches = matches[:maxMapTrees]
		}
		for _, dir := range matches {
			if isTreeRoot(dir) {
				roots = append(roots, filepath.Clean(dir))
			}
		}
	}
	return roots
}

// isTreeRoot reports whether dir is the top of a git working tree: it
// holds .git (a directory, or a file in a linked worktree).
func isTreeRoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".git"))
	return err == nil
}

// AddTree registers the working tree that holds dir as a tree of
// namespace ns, remembering what made it known (api.TreeFromStale or
// api.TreeFromHook), and returns it.
func (c *Checker) AddTree(ctx context.Context, ns, dir, source string) (api.GitTree, error) {
	ns, err := c.namespace(ns)
	if err != nil {
		return api.GitTree{}, err
	}
	source = cmp.Or(source, api.TreeFromStale)
	if source != api.TreeFromStale && source != api.TreeFromHook {
		return api.GitTree{}, api.Invalidf("tree source %q: want %q or %q", source, api.TreeFromStale, api.TreeFromHook)
	}
	if !filepath.IsAbs(dir) {
		return api.GitTree{}, api.Invalidf("tree directory %q: want an absolute path", dir)
	}
	root, err := gitrepo.Root(ctx, dir)
	if err != nil {
		return api.GitTree{}, api.Invalidf("%s: %v", dir, err)
	}
	if len(root) > maxTreeRoot {
		return api.GitTree{}, api.Invalidf("tree path of %d bytes: at most %d", len(root), maxTreeRoot)
	}
	data, err := json.Marshal(treeRecord{Source: source, Added: c.clock.Now().UTC()})
	if err != nil {
		return api.GitTree{}, err
	}
	if err := c.store.PutLocalDurable(treePrefix+ns+"\x00"+root, data); err != nil {
		return api.GitTree{}, fmt.Errorf("register tree %s: %w", root, err)
	}
	return api.GitTree{Namespace: ns, Root: root, Source: source}, nil
}

// AllTrees returns the trees of every namespace, each root once (with the
// first namespace that has it), leaving out those that are gone.
func (c *Checker) AllTrees() ([]api.GitTree, error) {
	namespaces := map[string]bool{}
	err := c.store.ScanLocal(treePrefix, func(key string, _ []byte) error {
		ns, _, _ := strings.Cut(strings.TrimPrefix(key, treePrefix), "\x00")
		namespaces[ns] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the git trees: %w", err)
	}
	mappings, err := projmap.Load(c.home)
	if err != nil {
		c.log.Warn("project mappings not read for git trees", "err", err)
	}
	for _, m := range mappings {
		if ns, err := c.namespace(m.Namespace); err == nil {
			namespaces[ns] = true
		}
	}
	seen := map[string]bool{}
	var out []api.GitTree
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		trees, err := c.Trees(ns)
		if err != nil {
			return out, err
		}
		for _, t := range trees {
			if !t.Missing && !seen[t.Root] {
				seen[t.Root] = true
				out = append(out, t)
			}
		}
	}
	return out, nil
}
