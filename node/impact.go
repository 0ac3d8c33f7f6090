package node

import (
	"context"
	"fmt"
	"strings"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// Impact lists the memories affected by a file: those that mention it
// (their extracted touches), those linked to it by an edge (file:PATH or
// file:PATH:lines), and, walking edges backwards, the memories that point
// at those. Archived and stale memories are listed too, with their status,
// as traces; deleted ones are not.
func (n *Node) Impact(ctx context.Context, req api.ImpactRequest) ([]api.Impacted, error) {
	path := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(req.Path), "file:"))
	if path == "" || len(path) > maxEndpointLen || strings.ContainsAny(path, "\x00\n") {
		return nil, api.Invalidf("path %q: give a file or directory path (at most %d bytes, one line)", req.Path, maxEndpointLen)
	}
	depth := req.Depth
	if depth == 0 {
		depth = 2
	}
	if depth < 0 || depth > maxDepth {
		return nil, api.Invalidf("depth %d: use 1 to %d", req.Depth, maxDepth)
	}
	dir := strings.HasSuffix(path, "/")
	covers := func(p string) bool {
		if dir {
			return strings.HasPrefix(p, path)
		}
		return p == path
	}

	out := []api.Impacted{}
	seen := map[string]bool{}
	var frontier []string
	add := func(id string, d int, via string) error {
		if seen[id] || len(out) >= maxTraversed {
			return nil
		}
		seen[id] = true
		m, err := n.load(id)
		if storageNotFound(err) || (err == nil && m.Status == model.StatusDeleted) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, api.Impacted{Memory: n.view(m), Depth: d, Via: via})
		frontier = append(frontier, id)
		return nil
	}

	// Memories that mention the file.
	err := n.store.ScanPrefix(storage.KindMemory, "touch", "file:"+path, func(t storage.Term, id string) error {
		if !covers(strings.TrimPrefix(t.Value, "file:")) {
			return nil
		}
		return add(id, 0, "mentions "+t.Value)
	})
	if err != nil {
		return nil, fmt.Errorf("impact of %s: %w", path, err)
	}
	// Memories linked to the file, in either direction.
	now := n.now()
	for _, field := range []string{"to", "from"} {
		err := n.store.ScanPrefix(storage.KindEdge, field, "file:"+path, func(t storage.Term, edgeID string) error {
			file := strings.TrimPrefix(t.Value, "file:")
			if lines := strings.LastIndexByte(file, ':'); !covers(file) && lines > 0 {
				file = file[:lines] // file:PATH:10-20
			}
			if !covers(file) {
				return nil
			}
			e, err := n.loadEdge(edgeID)
			if err != nil || !validAt(&e, now) {
				return err
			}
			other := e.From
			if field == "from" {
				other = e.To
			}
			if id, ok := strings.CutPrefix(other, IDPrefix); ok {
				return add(id, 0, "edge "+e.Rel+" "+t.Value)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("impact of %s: %w", path, err)
		}
	}
	// Backwards along edges: memories that point at affected ones.
	for d := 1; d <= depth && len(frontier) > 0; d++ {
		current := frontier
		frontier = nil
		for _, id := range current {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			edges, err := n.edgesOf(DisplayID(id), api.In)
			if err != nil {
				return nil, err
			}
			for _, e := range edges {
				from, ok := strings.CutPrefix(e.From, IDPrefix)
				if !ok || !validAt(&e, now) {
					continue
				}
				if err := add(from, d, e.Rel+" "+n.shortID(id)); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}
