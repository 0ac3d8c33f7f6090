package node

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/search"
)

// Graph expansion of searches: the strongest text matches pull in the
// memories they are linked to, and the text ranking and the graph ranking
// are fused by reciprocal rank.
const (
	expandHits    = 5   // strong hits whose neighbours join
	expandRatio   = 0.5 // a strong hit scores at least this share of the best
	maxNeighbours = 50
	rrfK          = 10  // reciprocal rank: 1/(rrfK+rank)
	graphWeight   = 0.8 // of the graph ranking, against 1 for the text ranking
)

// Fusion explains a result's place in a graph-expanded search:
// Score = 1/(10+TextRank) + 0.8/(10+GraphRank), a missing rank adding 0.
type Fusion struct {
	TextRank  int     `json:"text_rank,omitempty"`  // 1-based; 0: not a text match
	GraphRank int     `json:"graph_rank,omitempty"` // 1-based; 0: neither a strong hit nor linked to one
	Via       string  `json:"via,omitempty"`        // the strong hit that pulled it in, if it was
	Rel       string  `json:"rel,omitempty"`        // the relation of that link
	Score     float64 `json:"score"`
}

// String explains f in one line, e.g. "graph rank 2, linked related_to
// from m-…".
func (f *Fusion) String() string {
	var parts []string
	if f.TextRank > 0 {
		parts = append(parts, fmt.Sprintf("text rank %d", f.TextRank))
	}
	if f.GraphRank > 0 {
		parts = append(parts, fmt.Sprintf("graph rank %d", f.GraphRank))
	}
	s := fmt.Sprintf("fused %.4f from %s", f.Score, strings.Join(parts, " and "))
	if f.Via != "" {
		s += fmt.Sprintf(", linked %s from %s", f.Rel, f.Via)
	}
	return s
}

// graphSearch runs q, then ranks the strong hits each followed by the live
// memories linked to it (those that pass q's filters, strongest link
// first), and fuses that graph ranking with the text ranking. A strong hit
// thus stays ahead of what it pulls in, and a memory both matched and
// linked rises. Without such neighbours the text ranking stands as it is.
func (n *Node) graphSearch(ctx context.Context, q search.Query) (SearchResult, error) {
	res, err := n.indexSearch(ctx, q)
	if err != nil {
		return SearchResult{}, err
	}
	neighbours, via, err := n.neighbours(res.Hits)
	if err != nil || len(via) == 0 {
		return n.hydrate(res, nil)
	}
	nq := q
	nq.Text, nq.IDs, nq.Limit, nq.Explain = "", neighbours, len(neighbours), false
	passed, err := n.indexSearch(ctx, nq)
	if err != nil {
		return SearchResult{}, err
	}
	ok := map[string]bool{}
	for _, h := range passed.Hits {
		ok[h.ID] = true
	}
	fusion := map[string]*Fusion{}
	text := map[string]search.Hit{}
	for i, h := range res.Hits {
		fusion[h.ID] = &Fusion{TextRank: i + 1}
		text[h.ID] = h
	}
	rank := 0
	for _, id := range neighbours {
		if !ok[id] {
			continue
		}
		rank++
		f := fusion[id]
		if f == nil {
			f = &Fusion{}
			fusion[id] = f
		}
		f.GraphRank = rank
		if l, ok := via[id]; ok {
			f.Via, f.Rel = DisplayID(l.hit), l.rel
		}
	}
	hits := make([]search.Hit, 0, len(fusion))
	for id, f := range fusion {
		if f.TextRank > 0 {
			f.Score += 1 / float64(rrfK+f.TextRank)
		}
		if f.GraphRank > 0 {
			f.Score += graphWeight / float64(rrfK+f.GraphRank)
		}
		hits = append(hits, search.Hit{ID: id, Score: f.Score, Explain: text[id].Explain})
	}
	slices.SortFunc(hits, func(a, b search.Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(fusion[a.ID].TextRank, fusion[b.ID].TextRank), strings.Compare(a.ID, b.ID))
	})
	limit := q.Limit
	if limit == 0 {
		limit = search.DefaultLimit
	}
	res.Hits = hits[:min(len(hits), limit)]
	if !q.Explain {
		fusion = nil
	}
	return n.hydrate(res, fusion)
}

// link is how a neighbour was reached: from which strong hit, by which
// relation.
type link struct{ hit, rel string }

// neighbours returns the graph ranking: the full ids of the strong hits,
// each followed by the memories valid edges link to it (strongest edge
// first), and how each of those was reached.
func (n *Node) neighbours(hits []search.Hit) ([]string, map[string]link, error) {
	now := n.now()
	var out []string
	via := map[string]link{}
	seen := map[string]bool{}
	for i, h := range hits {
		if i == expandHits || h.Score < expandRatio*hits[0].Score {
			break
		}
		if !seen[h.ID] {
			seen[h.ID] = true
			out = append(out, h.ID)
		}
		edges, err := n.edgesOf(DisplayID(h.ID), Both)
		if err != nil {
			return nil, nil, err
		}
		slices.SortStableFunc(edges, func(a, b crdt.Edge) int { return cmp.Compare(b.Strength, a.Strength) })
		for _, e := range edges {
			other := e.To
			if other == DisplayID(h.ID) {
				other = e.From
			}
			id, isMemory := strings.CutPrefix(other, IDPrefix)
			if !isMemory || seen[id] || !validAt(&e, now) {
				continue
			}
			seen[id] = true
			via[id] = link{h.ID, e.Rel}
			if out = append(out, id); len(via) == maxNeighbours {
				return out, via, nil
			}
		}
	}
	return out, via, nil
}
