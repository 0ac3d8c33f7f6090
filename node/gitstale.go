package node

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/gitstale"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// CheckGit reads the commits of a namespace's trees since their last
// check (the whole history, bounded, the first time) and returns what
// each check found, with the number of the namespace's memories the tree
// makes stale. With req.Dir, the working tree that holds it is registered
// for the namespace first and is the only one checked. With
// req.Background the checks are queued for the node's git loop and the
// results only say so.
func (n *Node) CheckGit(ctx context.Context, req api.GitCheckRequest) ([]api.GitCheck, error) {
	ns, err := NormalizeNamespace(req.Namespace)
	if err != nil {
		return nil, err
	}
	var trees []api.GitTree
	if req.Dir != "" {
		t, err := n.git.AddTree(ctx, ns, req.Dir, req.Source)
		if err != nil {
			return nil, err
		}
		trees = []api.GitTree{t}
	} else if trees, err = n.git.Trees(ns); err != nil {
		return nil, err
	}
	out := make([]api.GitCheck, 0, len(trees))
	for _, t := range trees {
		if req.Background {
			out = append(out, api.GitCheck{Root: t.Root, Pending: n.git.Queue(t.Root), At: n.now().UTC()})
			continue
		}
		res, changed, err := n.git.Check(ctx, t.Root)
		if err != nil {
			return nil, err
		}
		if res.Full || res.Commits == 0 {
			changed = nil // judge every memory
		}
		if res.Stale, err = n.countGitStale(ctx, ns, t.Root, changed); err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// countGitStale counts the live memories of ns that the tree at root
// makes stale: among those that name one of paths, or all of them when
// paths is nil.
func (n *Node) countGitStale(ctx context.Context, ns, root string, paths []string) (int, error) {
	j := n.git.NewJudge(ctx)
	defer j.Close()
	now := n.now()
	count := 0
	judge := func(id string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := n.load(id)
		if err != nil {
			return err
		}
		if m.Namespace != ns || m.Status != model.StatusActive || m.Evergreen || m.Expired(now) {
			return nil
		}
		rs, err := j.Reasons(&m, func() ([]model.Edge, error) { return n.validEdges(id, now) }, root)
		if len(rs) > 0 {
			count++
		}
		return err
	}
	if paths == nil {
		err := n.store.Scan(storage.KindMemory, storage.Term{Field: "ns", Value: ns}, judge)
		return count, err
	}
	ids, err := n.memoriesNaming(paths)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if err := judge(id); err != nil {
			return count, err
		}
	}
	return count, nil
}

// memoriesNaming returns the ids of the memories that name one of paths:
// in their text (a file: touch) or by an edge to file:PATH[:LINES].
func (n *Node) memoriesNaming(paths []string) ([]string, error) {
	seen := map[string]bool{}
	for _, p := range paths {
		file := "file:" + p
		err := n.store.ScanPrefix(storage.KindMemory, "touch", file, func(t storage.Term, id string) error {
			if t.Value == file {
				seen[id] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, field := range []string{"to", "from"} {
			err := n.store.ScanPrefix(storage.KindEdge, field, file, func(t storage.Term, edgeID string) error {
				if gitstale.WithoutLines(t.Value) != file {
					return nil
				}
				e, err := n.loadEdge(edgeID)
				if err != nil {
					return err
				}
				for _, end := range []string{e.From, e.To} {
					if id, ok := strings.CutPrefix(end, IDPrefix); ok {
						seen[id] = true
					}
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// validEdges returns the edges valid at now that start or end at memory
// id.
func (n *Node) validEdges(id string, now time.Time) ([]model.Edge, error) {
	edges, err := n.edgesOf(DisplayID(id), api.Both)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(edges, func(e model.Edge) bool { return !validAt(&e, now) }), nil
}
