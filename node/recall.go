package node

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/memmesh/memmesh/internal/tokens"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
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
// of the results (demoteSuperseded weighed its score before the cut).
func (n *Node) label(ctx context.Context, hits []api.SearchHit) error {
	rules := n.staleRules(ctx)
	defer rules.close()
	successors := map[string][]string{} // short id -> short ids of its successors
	for i := range hits {
		h := &hits[i]
		m := &h.Memory.Memory
		switch m.Status {
		case model.StatusStale:
			h.Labels = append(h.Labels, labelStale+"marked stale")
		case model.StatusActive:
			reasons, err := rules.reasons(m)
			if err != nil {
				return err
			}
			for _, r := range reasons {
				if r.Rule != api.StaleSuperseded {
					h.Labels = append(h.Labels, labelStale+r.Text)
					continue
				}
				h.Labels = append(h.Labels, r.Text)
				if successors[h.ShortID], err = rules.supersededBy(m.ID); err != nil {
					return err
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
		split := slices.IndexFunc(hits, func(h api.SearchHit) bool { return h.Related != "" })
		if split < 0 {
			split = len(hits)
		}
		belowSuccessors(hits[:split], successors)
		belowSuccessors(hits[split:], successors)
	}
	return nil
}

// supersededWeight weighs the text score of a memory superseded since the
// last lifecycle pass as a stale memory's, as it will once the pass has
// seen it.
var supersededWeight = search.StatusWeight(model.StatusStale) / search.StatusWeight(model.StatusActive)

// demoteSuperseded orders hits by order and weighs, with demote, each
// active memory among the best limit that is superseded and not yet
// derived stale, until the best limit hold no memory left to weigh: the
// cut to limit then leaves a superseded memory's slot to its successor
// and the other matches. Only the best limit are checked, so the cost is
// that of labelling them.
func (n *Node) demoteSuperseded(ctx context.Context, hits []search.Hit, limit int, order func(a, b search.Hit) int, demote func(h *search.Hit)) error {
	rules := n.staleRules(ctx)
	checked := map[string]bool{}
	for {
		slices.SortStableFunc(hits, order)
		demoted := false
		for i := range hits[:min(len(hits), limit)] {
			h := &hits[i]
			if checked[h.ID] {
				continue
			}
			checked[h.ID] = true
			by, err := rules.supersededBy(h.ID)
			if err != nil {
				return err
			}
			if len(by) == 0 || n.life.derive(h.ID).Stale {
				continue
			}
			active, err := n.isActive(h.ID)
			if err != nil {
				return err
			}
			if !active {
				continue // gone since the search ran, or weighed by its status
			}
			demote(h)
			demoted = true
		}
		if !demoted {
			return nil
		}
	}
}

// demoteExplained weighs a hit's explained text score by supersededWeight.
func demoteExplained(e *api.Explanation) {
	if e == nil {
		return
	}
	e.Status *= supersededWeight
	e.Final *= supersededWeight
	e.Associated *= supersededWeight
}

// belowSuccessors orders hits by score, then moves each superseded memory
// just below the last of its successors among hits.
func belowSuccessors(hits []api.SearchHit, successors map[string][]string) {
	slices.SortStableFunc(hits, func(a, b api.SearchHit) int { return cmp.Compare(b.Score, a.Score) })
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
		active, err := n.isActive(raw)
		if err != nil {
			return nil, err
		}
		if active {
			out = append(out, n.shortID(raw))
		}
	}
	return out, nil
}

// budgetExcerpts are the shorter excerpts a hit can take, shortest first,
// to fit a budget.
var budgetExcerpts = []int{200, 600}

// fitBudget cuts res to the best results whose JSON fits budget tokens
// and sets res.Tokens. Breadth comes first: the hits, in order, take the
// shortest excerpt around needles while they fit; then each, in order,
// grows back to a longer excerpt or as it was while the budget allows.
// Hits are counted one by one and the whole is counted again at the end,
// dropping the last hit while it is over: tokens can merge across joins.
func fitBudget(res *api.SearchResult, budget int, needles []string) {
	type fitted struct {
		forms []api.SearchHit // shortest first
		costs []int
		at    int // the form taken
	}
	var kept []fitted
	hits := res.Results
	res.Results = []api.SearchHit{}
	used := countJSON(res)
	for _, h := range hits {
		var f fitted
		for _, size := range budgetExcerpts {
			cut := h
			cut.Conflict = slices.Clone(h.Conflict)
			excerpt(&cut, needles, size)
			f.forms = append(f.forms, cut)
		}
		f.forms = append(f.forms, h)
		for _, form := range f.forms {
			f.costs = append(f.costs, countJSON(form)+1) // and a comma
		}
		if used+f.costs[0] > budget {
			break
		}
		used += f.costs[0]
		kept = append(kept, f)
	}
	for i := range kept {
		f := &kept[i]
		for j := len(f.forms) - 1; j > f.at; j-- {
			if used-f.costs[f.at]+f.costs[j] <= budget {
				used += f.costs[j] - f.costs[f.at]
				f.at = j
				break
			}
		}
		res.Results = append(res.Results, f.forms[f.at])
	}
	for {
		// Tokens is part of what it counts: count until it holds.
		for range 3 {
			res.Tokens = countJSON(res)
		}
		if res.Tokens <= budget || len(res.Results) == 0 {
			return
		}
		// The whole counts a few tokens more than its parts did (the
		// tokenizer merges across their seams): a longer form gives way
		// first, the last result only when none is left.
		i := len(kept) - 1
		for i >= 0 && kept[i].at == 0 {
			i--
		}
		if i < 0 {
			res.Results, kept = res.Results[:len(res.Results)-1], kept[:len(kept)-1]
			continue
		}
		kept[i].at--
		res.Results[i] = kept[i].forms[kept[i].at]
	}
}

// countJSON counts the tokens of v as JSON.
func countJSON(v any) int {
	out, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return tokens.Count(string(out))
}

// Snippet returns about size bytes of text around the first of query's
// words that it holds (its start when it holds none), for listings of
// one line per result.
func Snippet(text, query string, size int) string {
	out, _ := search.Excerpt(text, strings.Fields(strings.ToLower(strings.ReplaceAll(query, `"`, " "))), size)
	return out
}
