package node

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/graph"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// maxBetweenness bounds the graphs whose betweenness Analyze computes
// (O(nodes × edges)).
const maxBetweenness = 5000

// Analyze measures a namespace's graph with gonum: god nodes by degree,
// bridges by betweenness, PageRank, and gaps (memories nothing links).
func (n *Node) Analyze(ctx context.Context, req api.AnalyzeRequest) (api.Analysis, error) {
	ns, err := NormalizeNamespace(req.Namespace)
	if err != nil {
		return api.Analysis{}, err
	}
	limit := cmp.Or(req.Limit, 10)
	if limit < 1 || limit > 100 {
		return api.Analysis{}, api.Invalidf("limit %d: use 1 to 100", req.Limit)
	}
	now := n.now()
	titles := map[string]string{}
	var nodes []string
	var edges []graph.Edge
	seenEdge := map[string]bool{}
	err = n.store.Scan(storage.KindMemory, storage.Term{Field: "ns", Value: ns}, func(id string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := n.load(id)
		if err != nil {
			return err
		}
		if m.Status != model.StatusActive && m.Status != model.StatusStale {
			return nil
		}
		at := DisplayID(id)
		nodes = append(nodes, at)
		titles[at] = cmp.Or(m.Title, snippetText(m.Content, 60))
		es, err := n.edgesOf(at, api.Both)
		for _, e := range es {
			if !seenEdge[e.ID] && validAt(&e, now) {
				seenEdge[e.ID] = true
				edges = append(edges, graph.Edge{From: e.From, To: e.To})
			}
		}
		return err
	})
	if err != nil {
		return api.Analysis{}, err
	}
	g := graph.Analyze(nodes, edges, maxBetweenness)
	out := api.Analysis{Namespace: ns, Memories: len(nodes), Edges: len(edges), Gaps: []api.Ranked{}}
	rank := func(scores map[string]float64) []api.Ranked {
		list := make([]api.Ranked, 0, len(scores))
		for id, s := range scores {
			if s > 0 {
				list = append(list, api.Ranked{ID: id, Title: titles[id], Score: roundTo(s, 4)})
			}
		}
		slices.SortFunc(list, func(a, b api.Ranked) int { return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.ID, b.ID)) })
		return list[:min(len(list), limit)]
	}
	degree := map[string]float64{}
	for id, d := range g.Degree {
		degree[id] = float64(d)
	}
	out.GodNodes, out.PageRank = rank(degree), rank(g.PageRank)
	if g.Betweenness != nil {
		out.Bridges = rank(g.Betweenness)
	}
	for _, id := range nodes {
		if g.Degree[id] == 0 {
			out.GapCount++
			if len(out.Gaps) < limit {
				out.Gaps = append(out.Gaps, api.Ranked{ID: id, Title: titles[id]})
			}
		}
	}
	return out, nil
}

// snippetText is the start of s on one line, at most n runes.
func snippetText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
