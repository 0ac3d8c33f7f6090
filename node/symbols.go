package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/symbols"
)

// SymbolsConfig configures the index of the symbols of working trees.
type SymbolsConfig struct {
	// Interval, when positive, makes Start index again every tree indexed
	// before, a minute after start and then once per interval.
	Interval time.Duration
	// Limits bound the work of indexing one tree; zero fields take
	// symbols.DefaultLimits'.
	Limits symbols.Limits
}

// DefaultSymbolsInterval is how often the daemon indexes its trees again.
const DefaultSymbolsInterval = 10 * time.Minute

// maxSymbolResults caps the symbols one lookup returns.
const maxSymbolResults = 1000

// Symbols finds the symbols of the indexed trees whose name or qualified
// name starts with the query, any case, exact names first.
func (n *Node) Symbols(ctx context.Context, req api.SymbolsRequest) ([]api.SymbolLocation, error) {
	limit := cmp.Or(req.Limit, 50)
	if limit < 0 || limit > maxSymbolResults {
		return nil, api.Invalidf("limit %d: use 1 to %d", req.Limit, maxSymbolResults)
	}
	ns, err := optionalNamespace(req.Namespace)
	if err != nil {
		return nil, err
	}
	locs, err := n.symbols.Find(req.Query, ns, limit)
	if err != nil {
		return nil, api.Invalidf("%v", err)
	}
	if locs == nil {
		locs = []api.SymbolLocation{}
	}
	return locs, nil
}

// Where returns where a symbol (a name, or Type.Method) is defined in the
// indexed trees, of namespace ns when it is set. Staleness checks use it
// to tell that a symbol a memory quotes moved to another file.
func (n *Node) Where(name, ns string) ([]api.SymbolLocation, error) {
	return n.symbols.Where(name, ns)
}

// IndexSymbols indexes the working tree that holds req.Dir now (its git
// working tree's top, or the directory itself outside git) for the
// namespace given, parsing only the files changed since it was last
// indexed. progress, when set, is told how far it is.
func (n *Node) IndexSymbols(ctx context.Context, req api.SymbolsIndexRequest, progress func(api.SymbolsProgress)) (api.SymbolsReport, error) {
	if !filepath.IsAbs(req.Dir) || len(req.Dir) > maxEndpointLen || strings.ContainsAny(req.Dir, "\x00\n") {
		return api.SymbolsReport{}, api.Invalidf("dir %q: give an absolute directory path", req.Dir)
	}
	ns, err := NormalizeNamespace(req.Namespace)
	if err != nil {
		return api.SymbolsReport{}, err
	}
	rep, err := n.symbols.Update(ctx, req.Dir, ns, progress)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, symbols.ErrNotDir) {
		return rep, api.Invalidf("%v", err)
	}
	if err != nil {
		return rep, fmt.Errorf("index the symbols of %s: %w", req.Dir, err)
	}
	n.log.Info("symbols indexed", "root", rep.Root, "files", rep.Files, "parsed", rep.Parsed, "symbols", rep.Symbols, "took_ms", rep.TookMS)
	return rep, nil
}

// SymbolTrees lists the indexed trees.
func (n *Node) SymbolTrees(ctx context.Context) ([]api.SymbolTree, error) {
	trees, err := n.symbols.Trees()
	if trees == nil {
		trees = []api.SymbolTree{}
	}
	return trees, err
}

// optionalNamespace checks a namespace that may be empty (all of them).
func optionalNamespace(ns string) (string, error) {
	if strings.TrimSpace(ns) == "" {
		return "", nil
	}
	return NormalizeNamespace(ns)
}

// runSymbols indexes the known trees again on the schedule: a minute
// after start (or after the interval, if shorter), then every interval.
func (n *Node) runSymbols(ctx context.Context, interval time.Duration) {
	n.every(ctx, min(time.Minute, interval), interval, n.reindexSymbols)
}

// reindexSymbols indexes the git working trees of every namespace (Trees:
// those project mappings name and those registered), in their namespace,
// and every tree indexed before, again. A tree whose directory is gone is
// dropped from the index.
func (n *Node) reindexSymbols(ctx context.Context) {
	var todo []api.SymbolsIndexRequest
	gitTrees, err := n.git.AllTrees()
	if err != nil {
		n.log.Warn("git trees not listed for the symbol index", "err", err)
	}
	for _, t := range gitTrees {
		todo = append(todo, api.SymbolsIndexRequest{Dir: t.Root, Namespace: t.Namespace})
	}
	trees, err := n.symbols.Trees()
	if err != nil {
		n.log.Warn("list the indexed trees", "err", err)
	}
	for _, t := range trees {
		todo = append(todo, api.SymbolsIndexRequest{Dir: t.Root, Namespace: t.Namespace})
	}
	done := map[string]bool{}
	for _, req := range todo {
		if ctx.Err() != nil {
			return
		}
		root, _, err := symbols.TreeRoot(ctx, req.Dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if n.symbols.Known(req.Dir) {
				n.log.Info("symbols: tree gone, dropped from the index", "root", req.Dir)
				if err := n.symbols.Drop(req.Dir); err != nil {
					n.log.Warn("drop a tree from the symbol index", "root", req.Dir, "err", err)
				}
			}
			continue
		case err != nil:
			n.log.Warn("index symbols", "dir", req.Dir, "err", err)
			continue
		case done[root]: // a root's mapping says its namespace; the tree's own record comes after
			continue
		}
		done[root] = true
		if _, err := n.IndexSymbols(ctx, req, nil); err != nil && ctx.Err() == nil {
			n.log.Warn("index symbols", "dir", req.Dir, "err", err)
		}
	}
}

// OriginSymbolIndex marks the defined_in edges a traversal derives from
// this machine's symbol index: from a symbol (code:NAME) to each file
// that defines it. They are not stored.
const OriginSymbolIndex = "symbol-index"

// symbolEdges returns the derived defined_in edges out of a symbol:
// code:NAME to each file that defines NAME, code:PATH::NAME to PATH when
// it does.
func (n *Node) symbolEdges(endpoint string, dir api.Direction) ([]model.Edge, error) {
	name, ok := strings.CutPrefix(endpoint, "code:")
	if !ok || dir == api.In {
		return nil, nil
	}
	inFile := ""
	if i := strings.LastIndex(name, "::"); i >= 0 {
		inFile, name = name[:i], name[i+2:]
	}
	if name == "" {
		return nil, nil
	}
	defs, err := n.symbols.Where(name, "")
	if err != nil {
		return nil, err
	}
	var out []model.Edge
	seen := map[string]bool{}
	for _, d := range defs {
		file := "file:" + d.File
		if seen[file] || inFile != "" && d.File != inFile {
			continue
		}
		seen[file] = true
		out = append(out, model.Edge{
			ID: crdt.EdgeID(endpoint, "defined_in", file), From: endpoint, Rel: "defined_in", To: file,
			Notes:    fmt.Sprintf("%s %s at line %d, in %s", d.Kind, d.Qualified(), d.Line, d.Root),
			Strength: 1, Origin: OriginSymbolIndex,
		})
	}
	return out, nil
}
