package node

import (
	"cmp"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/crdt"
	"github.com/memmesh/memmesh/search"
)

// Labels of search results, derived when searched from the memory's status
// and its valid edges, so that they hold at once after a change rather
// than after the next lifecycle pass.
const (
	labelStale        = "stale: "
	labelContradicted = "contradicted by "
)

// label sets the labels of hits (matches first, then related memories)
// and ranks every superseded memory below its successors within its part
// of the results: its score weighs as a stale memory's, as it will once
// the lifecycle pass has seen it.
func (n *Node) label(hits []SearchHit) error {
	rules := n.staleRules()
	successors := map[string][]string{} // short id -> short ids of its successors
	for i := range hits {
		h := &hits[i]
		m := &h.Memory.Memory
		switch m.Status {
		case crdt.StatusStale:
			h.Labels = append(h.Labels, labelStale+"marked stale")
		case crdt.StatusActive:
			reasons, err := rules.reasons(m)
			if err != nil {
				return err
			}
			for _, r := range reasons {
				if r.rule != StaleSuperseded {
					h.Labels = append(h.Labels, labelStale+r.text)
					continue
				}
				h.Labels = append(h.Labels, r.text)
				if successors[h.ShortID], err = rules.supersededBy(m.ID); err != nil {
					return err
				}
				if !n.life.derive(m.ID).Stale {
					h.Score *= search.StatusWeight(crdt.StatusStale) / search.StatusWeight(crdt.StatusActive)
				}
			}
		}
		against, err := n.contradictedBy(rules, m.ID)
		if err != nil {
			return err
		}
		for _, id := range against {
			h.Labels = append(h.Labels, labelContradicted+id)
		}
	}
	if len(successors) > 0 {
		split := slices.IndexFunc(hits, func(h SearchHit) bool { return h.Related != "" })
		if split < 0 {
			split = len(hits)
		}
		belowSuccessors(hits[:split], successors)
		belowSuccessors(hits[split:], successors)
	}
	return nil
}

// belowSuccessors orders hits by score, then moves each superseded memory
// just below the last of its successors among hits.
func belowSuccessors(hits []SearchHit, successors map[string][]string) {
	slices.SortStableFunc(hits, func(a, b SearchHit) int { return cmp.Compare(b.Score, a.Score) })
	for moved := true; moved; {
		moved = false
		for i := range hits {
			last := -1
			for j := i + 1; j < len(hits); j++ {
				if slices.Contains(successors[hits[i].ShortID], hits[j].ShortID) {
					last = j
				}
			}
			if last > i {
				h := hits[i]
				copy(hits[i:last], hits[i+1:last+1])
				hits[last] = h
				moved = true
				break
			}
		}
	}
}

// contradictedBy returns the short ids of the live memories that a valid
// contradicts edge joins to memory id.
func (n *Node) contradictedBy(rules *staleRules, id string) ([]string, error) {
	edges, err := n.edgesAt(rules, id)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range edges {
		if e.Rel != "contradicts" {
			continue
		}
		other := e.To
		if other == DisplayID(id) {
			other = e.From
		}
		raw, ok := strings.CutPrefix(other, IDPrefix)
		if !ok {
			continue
		}
		if m, err := n.load(raw); err == nil && m.Status == crdt.StatusActive {
			out = append(out, n.shortID(raw))
		}
	}
	return out, nil
}
