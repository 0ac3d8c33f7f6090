// Package graph holds memmesh's graph algorithms over typed edges, on
// gonum: cycle detection for the acyclic relations. It knows nothing of
// storage or documents: callers pass edges as pairs of endpoint names.
package graph

import (
	"slices"
	"strings"

	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
)

// Edge is a directed edge between two endpoints (memory ids or artefacts).
type Edge struct{ From, To string }

// Cycles returns the groups of endpoints that lie on a cycle: the strongly
// connected components of more than one endpoint, and endpoints with an
// edge to themselves. Each group is sorted, and the groups are sorted by
// their first endpoint, so the result does not depend on edge order.
func Cycles(edges []Edge) [][]string {
	ids := map[string]int64{}
	var names []string
	id := func(name string) int64 {
		if i, ok := ids[name]; ok {
			return i
		}
		ids[name] = int64(len(names))
		names = append(names, name)
		return ids[name]
	}
	g := simple.NewDirectedGraph()
	var out [][]string
	for _, e := range edges {
		if e.From == e.To {
			out = append(out, []string{e.From})
			continue
		}
		from, to := id(e.From), id(e.To)
		for _, n := range []int64{from, to} {
			if g.Node(n) == nil {
				g.AddNode(simple.Node(n))
			}
		}
		g.SetEdge(g.NewEdge(simple.Node(from), simple.Node(to)))
	}
	for _, scc := range topo.TarjanSCC(g) {
		if len(scc) < 2 {
			continue
		}
		group := make([]string, len(scc))
		for i, n := range scc {
			group[i] = names[n.ID()]
		}
		slices.Sort(group)
		out = append(out, group)
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return slices.CompactFunc(out, func(a, b []string) bool { return slices.Equal(a, b) })
}
