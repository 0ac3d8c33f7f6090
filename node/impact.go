package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// Impact lists the memories affected by a file or a symbol, and, walking
// edges backwards, the memories that point at those. Archived and stale
// memories are listed too, with their status, as traces; deleted ones
// are not.
//
// A file's memories are those that mention it (their extracted touches)
// and those linked to it by an edge (file:PATH or file:PATH:lines). The
// start is a symbol when it is written code:NAME, or when it is no path
// (no "/") and the symbol index knows a definition of that name: then
// its memories are those that mention it (code:NAME, and code:Type.Name
// for a method), those linked to it (code:NAME, code:PATH::NAME), and
// those of the files that define it (as above), since a change to a
// symbol is a change to its file.
func (n *Node) Impact(ctx context.Context, req api.ImpactRequest) ([]api.Impacted, error) {
	path := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(req.Path), "file:"))
	if path == "" || len(path) > maxEndpointLen || strings.ContainsAny(path, "\x00\n") {
		return nil, api.Invalidf("path %q: give a file or directory path, or a symbol (at most %d bytes, one line)", req.Path, maxEndpointLen)
	}
	depth := req.Depth
	if depth == 0 {
		depth = 2
	}
	if depth < 0 || depth > maxDepth {
		return nil, api.Invalidf("depth %d: use 1 to %d", req.Depth, maxDepth)
	}
	w := &impactWalk{n: n, seen: map[string]bool{}, out: []api.Impacted{}, now: n.now()}
	symbol, explicit := strings.CutPrefix(path, "code:")
	var defs []api.SymbolLocation
	if explicit || !strings.Contains(path, "/") && !strings.HasPrefix(strings.TrimSpace(req.Path), "file:") {
		var err error
		if defs, err = n.symbols.Where(symbol, ""); err != nil {
			return nil, fmt.Errorf("impact of %s: %w", symbol, err)
		}
	}
	var err error
	if explicit || len(defs) > 0 {
		err = w.symbol(symbol, defs)
	} else {
		err = w.file(path, "")
	}
	if err != nil {
		return nil, fmt.Errorf("impact of %s: %w", path, err)
	}
	if err := w.back(ctx, depth); err != nil {
		return nil, err
	}
	return w.out, nil
}

// impactWalk gathers the memories an impact reaches.
type impactWalk struct {
	n        *Node
	now      time.Time
	out      []api.Impacted
	seen     map[string]bool
	frontier []string
}

// add lists a memory (once) at depth d, reached via what.
func (w *impactWalk) add(id string, d int, via string) error {
	if w.seen[id] || len(w.out) >= maxTraversed {
		return nil
	}
	w.seen[id] = true
	m, err := w.n.load(id)
	if storageNotFound(err) || (err == nil && m.Status == model.StatusDeleted) {
		return nil
	}
	if err != nil {
		return err
	}
	w.out = append(w.out, api.Impacted{Memory: w.n.view(m), Depth: d, Via: via})
	w.frontier = append(w.frontier, id)
	return nil
}

// file adds the memories that mention a file (or a directory/) or are
// linked to it; why, when set, says why the file counts.
func (w *impactWalk) file(path, why string) error {
	dir := strings.HasSuffix(path, "/")
	covers := func(p string) bool {
		if dir {
			return strings.HasPrefix(p, path)
		}
		return p == path
	}
	err := w.n.store.ScanPrefix(storage.KindMemory, "touch", "file:"+path, func(t storage.Term, id string) error {
		if !covers(strings.TrimPrefix(t.Value, "file:")) {
			return nil
		}
		return w.add(id, 0, "mentions "+t.Value+why)
	})
	if err != nil {
		return err
	}
	return w.linked("file:"+path, func(endpoint string) bool {
		file := strings.TrimPrefix(endpoint, "file:")
		if lines := strings.LastIndexByte(file, ':'); !covers(file) && lines > 0 {
			file = file[:lines] // file:PATH:10-20
		}
		return covers(file)
	}, why)
}

// symbol adds the memories that mention a symbol or are linked to it,
// and those of the files that define it.
func (w *impactWalk) symbol(name string, defs []api.SymbolLocation) error {
	names := map[string]bool{name: true}
	for _, d := range defs {
		names[d.Qualified()] = true
	}
	for s := range names {
		err := w.n.store.Scan(storage.KindMemory, storage.Term{Field: "touch", Value: "code:" + s}, func(id string) error {
			return w.add(id, 0, "mentions code:"+s)
		})
		if err != nil {
			return err
		}
		if err := w.linked("code:"+s, func(e string) bool { return e == "code:"+s }, ""); err != nil {
			return err
		}
	}
	files := map[string]bool{}
	for _, d := range defs {
		if !files[d.File] {
			files[d.File] = true
			err := w.linked("code:"+d.File+"::", func(e string) bool {
				return names[strings.TrimPrefix(e, "code:"+d.File+"::")]
			}, "")
			if err != nil {
				return err
			}
		}
	}
	for _, d := range defs {
		if err := w.file(d.File, ", which defines "+d.Qualified()); err != nil {
			return err
		}
	}
	return nil
}

// linked adds the memories linked, in either direction, by a valid edge
// to an endpoint that starts with prefix and that match accepts.
func (w *impactWalk) linked(prefix string, match func(endpoint string) bool, why string) error {
	for _, field := range []string{"to", "from"} {
		err := w.n.store.ScanPrefix(storage.KindEdge, field, prefix, func(t storage.Term, edgeID string) error {
			if !match(t.Value) {
				return nil
			}
			e, err := w.n.loadEdge(edgeID)
			if err != nil || !validAt(&e, w.now) {
				return err
			}
			other := e.From
			if field == "from" {
				other = e.To
			}
			if id, ok := strings.CutPrefix(other, IDPrefix); ok {
				return w.add(id, 0, "edge "+e.Rel+" "+t.Value+why)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// back walks edges backwards from the memories reached: memories that
// point at affected ones.
func (w *impactWalk) back(ctx context.Context, depth int) error {
	for d := 1; d <= depth && len(w.frontier) > 0; d++ {
		current := w.frontier
		w.frontier = nil
		for _, id := range current {
			if err := ctx.Err(); err != nil {
				return err
			}
			edges, err := w.n.edgesOf(DisplayID(id), api.In)
			if err != nil {
				return err
			}
			for _, e := range edges {
				from, ok := strings.CutPrefix(e.From, IDPrefix)
				if !ok || !validAt(&e, w.now) {
					continue
				}
				if err := w.add(from, d, e.Rel+" "+w.n.shortID(id)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
