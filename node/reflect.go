package node

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memmesh/memmesh/api"
)

// reflectCandidates is how many candidate targets each memory gets.
const reflectCandidates = 3

// Reflect lists the memories of a namespace that nothing links (the gaps of
// Analyze) with, for each, the memories a search for its words finds: an
// agent reads them and links what belongs together.
func (n *Node) Reflect(ctx context.Context, req api.ReflectRequest) ([]api.Reflection, error) {
	limit := cmp.Or(req.Limit, 10)
	if limit < 1 || limit > 50 {
		return nil, api.Invalidf("limit %d: use 1 to 50", req.Limit)
	}
	a, err := n.Analyze(ctx, api.AnalyzeRequest{Namespace: req.Namespace, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := []api.Reflection{}
	for _, gap := range a.Gaps {
		m, err := n.load(strings.TrimPrefix(gap.ID, IDPrefix))
		if err != nil {
			return nil, err
		}
		r := api.Reflection{Memory: gap, Candidates: []api.Ranked{}}
		query := reflectQuery(m.Title + " " + m.Content)
		if query != "" {
			hits, err := n.Search(ctx, api.SearchRequest{Query: query, Namespace: a.Namespace, Limit: reflectCandidates + 1})
			if err != nil {
				return nil, err
			}
			for _, h := range hits.Results {
				if h.ID != gap.ID && len(r.Candidates) < reflectCandidates {
					r.Candidates = append(r.Candidates, api.Ranked{ID: h.ID, Title: cmp.Or(h.Title, snippetText(h.Content, 60)), Score: roundTo(h.Score, 4)})
				}
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// reflectWordRunes is the longest word reflectQuery keeps: longer ones
// (hashes, encoded data) relate nothing and a query refuses them.
const reflectWordRunes = 32

// reflectQuery turns a memory's text into a search for related ones: its
// distinct words of four to reflectWordRunes letters (short words say
// little), at most a dozen, longest first.
func reflectQuery(text string) string {
	seen := map[string]bool{}
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if n := utf8.RuneCountInString(w); n >= 4 && n <= reflectWordRunes && !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	slices.SortStableFunc(words, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return strings.Join(words[:min(len(words), 12)], " ")
}
