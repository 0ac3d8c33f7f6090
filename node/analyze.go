package node

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/graph"
	"github.com/memmesh/memmesh/model"
	"github.com/memmesh/memmesh/storage"
)

// AnalyzeRequest asks for the shape of a namespace's graph.
type AnalyzeRequest struct {
	Namespace string `json:"namespace,omitempty"`
	Limit     int    `json:"limit,omitempty"` // entries per list; default 10, at most 100
}

// Ranked is an endpoint with a score; Title is set for memories.
type Ranked struct {
	ID    string  `json:"id"`
	Title string  `json:"title,omitempty"`
	Score float64 `json:"score"`
}

// Analysis is the shape of a namespace's knowledge graph: its memories
// (active and stale) and every edge at them, valid now.
type Analysis struct {
	Namespace string   `json:"namespace"`
	Memories  int      `json:"memories"`
	Edges     int      `json:"edges"`
	GodNodes  []Ranked `json:"god_nodes"`         // most connected (degree)
	Bridges   []Ranked `json:"bridges,omitempty"` // most shortest paths through them (betweenness); omitted for graphs over maxBetweenness
	PageRank  []Ranked `json:"pagerank"`          // most linked-to, transitively
	Gaps      []Ranked `json:"gaps"`              // memories with no edge at all
	GapCount  int      `json:"gap_count"`         // all of them, beyond the list
}

// maxBetweenness bounds the graphs whose betweenness Analyze computes
// (O(nodes × edges)).
const maxBetweenness = 5000

// Analyze measures a namespace's graph with gonum: god nodes by degree,
// bridges by betweenness, PageRank, and gaps (memories nothing links).
func (n *Node) Analyze(ctx context.Context, req AnalyzeRequest) (Analysis, error) {
	ns, err := NormalizeNamespace(req.Namespace)
	if err != nil {
		return Analysis{}, err
	}
	limit := cmp.Or(req.Limit, 10)
	if limit < 1 || limit > 100 {
		return Analysis{}, invalidf("limit %d: use 1 to 100", req.Limit)
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
		es, err := n.edgesOf(at, Both)
		for _, e := range es {
			if !seenEdge[e.ID] && validAt(&e, now) {
				seenEdge[e.ID] = true
				edges = append(edges, graph.Edge{From: e.From, To: e.To})
			}
		}
		return err
	})
	if err != nil {
		return Analysis{}, err
	}
	g := graph.Analyze(nodes, edges, maxBetweenness)
	out := Analysis{Namespace: ns, Memories: len(nodes), Edges: len(edges), Gaps: []Ranked{}}
	rank := func(scores map[string]float64) []Ranked {
		list := make([]Ranked, 0, len(scores))
		for id, s := range scores {
			if s > 0 {
				list = append(list, Ranked{ID: id, Title: titles[id], Score: roundTo(s, 4)})
			}
		}
		slices.SortFunc(list, func(a, b Ranked) int { return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.ID, b.ID)) })
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
				out.Gaps = append(out.Gaps, Ranked{ID: id, Title: titles[id]})
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
