package graph

import (
	"gonum.org/v1/gonum/graph/network"
	"gonum.org/v1/gonum/graph/simple"
)

// Analysis holds per-endpoint measures of a graph.
type Analysis struct {
	Degree      map[string]int     // edges at each endpoint, both directions
	PageRank    map[string]float64 // importance by incoming links (damping 0.85)
	Betweenness map[string]float64 // how many shortest paths pass through; nil when skipped
}

// Analyze measures a graph of the given endpoints and edges (edges may
// name endpoints not in nodes; they are added). Betweenness costs
// O(nodes × edges) and is computed only for graphs of at most
// maxBetweenness endpoints.
func Analyze(nodes []string, edges []Edge, maxBetweenness int) Analysis {
	ids := map[string]int64{}
	var names []string
	directed := simple.NewDirectedGraph()
	undirected := simple.NewUndirectedGraph()
	id := func(name string) int64 {
		if i, ok := ids[name]; ok {
			return i
		}
		i := int64(len(names))
		ids[name] = i
		names = append(names, name)
		directed.AddNode(simple.Node(i))
		undirected.AddNode(simple.Node(i))
		return i
	}
	for _, n := range nodes {
		id(n)
	}
	a := Analysis{Degree: map[string]int{}, PageRank: map[string]float64{}}
	for _, e := range edges {
		if e.From == e.To {
			continue
		}
		from, to := id(e.From), id(e.To)
		if !directed.HasEdgeFromTo(from, to) {
			directed.SetEdge(directed.NewEdge(simple.Node(from), simple.Node(to)))
		}
		if !undirected.HasEdgeBetween(from, to) {
			undirected.SetEdge(undirected.NewEdge(simple.Node(from), simple.Node(to)))
		}
	}
	for i, name := range names {
		a.Degree[name] = undirected.From(int64(i)).Len()
	}
	if len(names) == 0 {
		return a
	}
	for i, r := range network.PageRankSparse(directed, 0.85, 1e-6) {
		a.PageRank[names[i]] = r
	}
	if len(names) <= maxBetweenness {
		a.Betweenness = map[string]float64{}
		for i, b := range network.Betweenness(undirected) {
			a.Betweenness[names[i]] = b
		}
	}
	return a
}
